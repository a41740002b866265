package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
	"github.com/hobbs-agent/hobbs/src/task"
)

// mailFixture is a fixture whose one trigger is a mail trigger on the
// real Dovecot d, with example.org's throwaway DKIM key in its DNS.
func mailFixture(t *testing.T, maxRuns int) (*fixture, *mailtest.Dovecot, mailtest.Key, *Service) {
	f := newFixture(t, "")
	d := mailtest.Start(t)
	key := mailtest.NewKey("example.org")
	host, port, _ := strings.Cut(d.Addr, ":")
	p := 0
	fmt.Sscan(port, &p)
	f.cfg.Serve.MaxRuns = maxRuns
	f.cfg.Triggers = map[string]config.Trigger{"inbox": {Source: config.TriggerIMAP, Playbook: "triage-issue",
		IMAP: config.IMAP{Host: host, Port: p, TLS: config.TLSNone, User: d.User, Password: "mail-password", From: []string{"alice@example.org"}}}}
	f.ch.got = make(chan channel.Notice, 5000)
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: time.Now,
		Secret: func(string) ([]byte, error) { return []byte(d.Password), nil },
		Mail: MailOptions{LookupTXT: mailtest.DNS(key), Tune: func(w *mail.Watcher) {
			w.MinBackoff, w.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
			w.HoldRetry = 50 * time.Millisecond
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return f, d, key, s
}

// waitNotice waits for a notice whose ID has prefix and returns it.
func (f *fixture) waitNotice(prefix string) channel.Notice {
	f.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case n := <-f.ch.got:
			if strings.HasPrefix(n.ID, prefix) {
				return n
			}
		case <-deadline:
			f.t.Fatalf("no notice %s", prefix)
		}
	}
}

// waitWatching waits until the mailbox's state was first written: mail
// delivered from then on is new to the watcher.
func (f *fixture) waitWatching() {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !f.in.FS().Exists(store{in: f.in}.path(mailState("inbox"))) {
		if time.Now().After(deadline) {
			f.t.Fatal("the mailbox is not watched")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMailFlood: 1,000 signed messages at once, each its own thread, all
// become runs: none lost, none twice, never more than max_runs at once;
// forged ones among them run nothing, stay unread, and are counted in
// /status.
func TestMailFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of runs: the full suite (make test's second pass) runs it")
	}
	f, d, key, s := mailFixture(t, 3)
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	const n = 1000
	for i := 0; i < n; i++ {
		d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", fmt.Sprintf("flood %d", i), "x")))
		if i%250 == 0 {
			d.Deliver(t, mailtest.Message("alice@example.org", "h@test", "forged", "x"))
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		nt := f.waitNotice("task:")
		if seen[nt.ID] {
			t.Fatalf("two ends of %s", nt.ID)
		}
		seen[nt.ID] = true
	}
	f.runner.mu.Lock()
	most, got := f.runner.most, len(f.runner.jobs)
	subjects := map[string]bool{}
	for _, e := range f.runner.events {
		subjects[e.Title] = true
	}
	f.runner.mu.Unlock()
	if got != n || len(subjects) != n || most > 3 {
		t.Errorf("%d runs of %d subjects, at most %d at once (max_runs 3)", got, len(subjects), most)
	}
	st, err := s.Status(t.Context())
	if err != nil || !strings.Contains(st, "mail inbox: watching, 4 messages refused") {
		t.Errorf("status: %v\n%s", err, st)
	}
	if u := d.Unseen(t); u != 4 {
		t.Errorf("%d unread, want the 4 forged", u)
	}
}

// TestMailStuckMailbox: the server gone reaches the owner once, however
// often the watcher retries, and its return once; mail that arrived
// meanwhile runs once.
func TestMailStuckMailbox(t *testing.T) {
	f, d, key, s := mailFixture(t, 2)
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	d.Stop(t)
	down := f.waitNotice("mail:inbox:")
	if down.ID != "mail:inbox:down" || !strings.Contains(down.Text, "cannot be read") {
		t.Fatalf("notice %+v", down)
	}
	d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", "while away", "x")))
	d.Restart(t)
	up := f.waitNotice("mail:inbox:")
	if up.ID != "mail:inbox:up" {
		t.Fatalf("after the restart: %+v", up)
	}
	end := f.waitNotice("task:")
	if !strings.Contains(end.Text, "trigger inbox") {
		t.Errorf("end %+v", end)
	}
	f.ch.mu.Lock()
	downs := 0
	for _, n := range f.ch.notices {
		if n.ID == "mail:inbox:down" {
			downs++
		}
	}
	f.ch.mu.Unlock()
	if downs != 1 {
		t.Errorf("%d down notices", downs)
	}
	f.auditHas(`"outcome":"down"`, `"outcome":"up"`)
}

// TestMailDebounceByThread: a message and a reply to it (its thread)
// within the debounce window make one run, with the latest message;
// another thread makes its own.
func TestMailDebounceByThread(t *testing.T) {
	f, d, key, _ := mailFixture(t, 2)
	tr := f.cfg.Triggers["inbox"]
	tr.Debounce = "1m"
	f.cfg.Triggers["inbox"] = tr
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: f.now,
		Secret: func(string) ([]byte, error) { return []byte(d.Password), nil },
		Mail:   MailOptions{LookupTXT: mailtest.DNS(key)}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	first := mailtest.Message("alice@example.org", "h@test", "Invoice", "first")
	id := strings.TrimSpace(strings.SplitN(strings.SplitN(string(first), "Message-ID:", 2)[1], "\r\n", 2)[0])
	d.Deliver(t, key.Sign(first))
	d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", "Re: Invoice", "second", "In-Reply-To: "+id, "References: "+id)))
	d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", "Other", "third")))
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := f.in.FS().ReadFile(f.in.AuditLog(), 1<<20)
		if strings.Count(string(b), `"outcome":"queued"`) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 messages not queued:\n%s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.advance(2 * time.Minute)
	s.kick()
	f.waitNotice("task:")
	f.waitNotice("task:")
	f.runner.mu.Lock()
	defer f.runner.mu.Unlock()
	titles := map[string]int{}
	for i, j := range f.runner.jobs {
		titles[f.runner.events[i].Title] = len(j.Deliveries)
	}
	if len(f.runner.jobs) != 2 || titles["Re: Invoice"] != 2 || titles["Other"] != 1 {
		t.Errorf("runs: %v", titles)
	}
}

// TestMailRefused: a message over max_message, one whose header does not
// parse, and a forged one run nothing, stay unread, are audited with the
// sender and reason but not the body, and are counted in /status; the
// files of a mail run no longer queued are swept at the start.
func TestMailRefused(t *testing.T) {
	f, d, _, _ := mailFixture(t, 2)
	tr := f.cfg.Triggers["inbox"]
	tr.MaxMessage = 64 << 10
	f.cfg.Triggers["inbox"] = tr
	stale := store{in: f.in}.mailRunDir("task_20260101_001")
	if err := f.in.FS().MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: time.Now,
		Secret: func(string) ([]byte, error) { return []byte(d.Password), nil },
		Mail:   MailOptions{LookupTXT: mailtest.DNS()}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	if f.in.FS().Exists(stale) {
		t.Errorf("a stale mail run's files were not swept")
	}
	d.Deliver(t, mailtest.Message("alice@example.org", "h@test", "big", strings.Repeat("SECRET-BODY ", 10000)))
	d.Deliver(t, []byte("From: alice@example.org\r\nFrom: bob@example.org\r\n\r\nSECRET-BODY"))
	d.Deliver(t, mailtest.Message("alice@example.org", "h@test", "forged", "SECRET-BODY"))
	deadline := time.Now().Add(time.Minute)
	for {
		st, _ := s.Status(t.Context())
		if strings.Contains(st, "3 messages refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status: %s", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.auditHas(`"reason":"over 65536 bytes (max_message)"`, `"reason":"does not parse: 2 From headers"`, `"reason":"no DKIM signature"`, `"sender":"alice@example.org"`)
	b, _ := f.in.FS().ReadFile(f.in.AuditLog(), 1<<20)
	if strings.Contains(string(b), "SECRET-BODY") {
		t.Errorf("a refused body reached the audit log")
	}
	if u := d.Unseen(t); u != 3 {
		t.Errorf("%d unread, want 3", u)
	}
	if f.runner.count() != 0 {
		t.Errorf("%d runs", f.runner.count())
	}
}

// TestMailDKIMDNS: the senders' DKIM keys are looked up at the DNS server
// dkim_dns names (a real one on loopback), and nothing else decides what
// DKIM trusts: HOBBS_TEST_DKIM_RECORDS, once read by the service, naming a
// file that publishes an attacker's key for example.org, changes nothing.
// The message the attacker's key signed is refused; the one the key in
// DNS signed runs.
func TestMailDKIMDNS(t *testing.T) {
	f := newFixture(t, "")
	d := mailtest.Start(t)
	key, forged := mailtest.NewKey("example.org"), mailtest.NewKey("example.org")
	dns := mailtest.StartDNS(t, key)
	recs := filepath.Join(t.TempDir(), "dkim.json")
	if err := os.WriteFile(recs, []byte(`{"test._domainkey.example.org": ["`+forged.Record()+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOBBS_TEST_DKIM_RECORDS", recs)
	host, port, _ := strings.Cut(d.Addr, ":")
	p, _ := strconv.Atoi(port)
	f.cfg.Triggers = map[string]config.Trigger{"inbox": {Source: config.TriggerIMAP, Playbook: "triage-issue",
		IMAP: config.IMAP{Host: host, Port: p, TLS: config.TLSNone, User: d.User, Password: "mail-password",
			From: []string{"alice@example.org"}, DKIMDNS: dns.Addr}}}
	f.ch.got = make(chan channel.Notice, 10)
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: time.Now,
		Secret: func(string) ([]byte, error) { return []byte(d.Password), nil }})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	d.Deliver(t, forged.Sign(mailtest.Message("alice@example.org", "h@test", "forged", "x")))
	d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", "signed", "x")))
	f.waitNotice("task:")
	f.auditHas(`"reason":"DKIM signature does not verify`)
	f.runner.mu.Lock()
	defer f.runner.mu.Unlock()
	if len(f.runner.events) != 1 || f.runner.events[0].Title != "signed" {
		t.Errorf("runs: %+v", f.runner.events)
	}
	if dns.Queries.Load() < 2 {
		t.Errorf("%d look-ups reached the DNS server", dns.Queries.Load())
	}
}

// TestMailWaitsForPlaybook: mail from a listed sender that arrives while
// the trigger's playbook may not run (not approved, or changed since) is
// neither lost nor run: it stays in the mailbox, unread, and the owner is
// told once which playbook to approve, however many messages wait and
// however often the watcher looks. Once the playbook may run, every
// waiting message runs, once, in order; a forged one among them still
// runs nothing.
func TestMailWaitsForPlaybook(t *testing.T) {
	f, d, key, s := mailFixture(t, 2)
	f.runner.mu.Lock()
	f.runner.checkErr = fmt.Errorf("playbook triage-issue is not approved (hobbs playbook approve triage-issue)")
	f.runner.mu.Unlock()
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	d.Deliver(t, mailtest.Message("alice@example.org", "h@test", "forged", "x"))
	for i := range 3 {
		d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", fmt.Sprintf("waiting %d", i), "x")))
	}
	n := f.waitNotice("mail:inbox:")
	if !strings.HasPrefix(n.ID, "mail:inbox:waiting:playbook:") || !strings.Contains(n.Text, "triage-issue") || !strings.Contains(n.Text, "alice@example.org") {
		t.Errorf("the owner's notice: %+v", n)
	}
	time.Sleep(2 * time.Second) // the watcher looks again every 50ms
	f.ch.mu.Lock()
	told := 0
	for _, n := range f.ch.notices {
		if strings.HasPrefix(n.ID, "mail:inbox:") {
			told++
		}
	}
	f.ch.mu.Unlock()
	if told != 1 || f.runner.count() != 0 || d.Unseen(t) != 4 {
		t.Errorf("while waiting: %d notices, %d runs, %d unread (want 1, 0, 4)", told, f.runner.count(), d.Unseen(t))
	}
	if st, err := s.Status(t.Context()); err != nil || !strings.Contains(st, "mail inbox: mail waits, unread: playbook may not run: playbook triage-issue is not approved") {
		t.Errorf("status while waiting: %v\n%s", err, st)
	}
	f.auditHas(`"outcome":"waiting"`, `"sender":"alice@example.org"`)
	f.runner.mu.Lock()
	f.runner.checkErr = nil
	f.runner.mu.Unlock()
	for range 3 {
		f.waitNotice("task:")
	}
	time.Sleep(500 * time.Millisecond)
	if titles := f.runner.titles(); strings.Join(titles, ",") != "waiting 0,waiting 1,waiting 2" {
		t.Errorf("runs after the approval: %v", titles)
	}
	if u := d.Unseen(t); u != 1 {
		t.Errorf("%d unread, want the forged one", u)
	}
	if st, _ := s.Status(t.Context()); !strings.Contains(st, "mail inbox: watching") {
		t.Errorf("status after the wait:\n%s", st)
	}
}

// TestMailBadCA: a tls_ca file that cannot be read, or holds no
// certificate, stops the service's start with the path and advice,
// before anything connects.
func TestMailBadCA(t *testing.T) {
	f := newFixture(t, "")
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{notPEM, filepath.Join(t.TempDir(), "missing.pem")} {
		f.cfg.Triggers = map[string]config.Trigger{"inbox": {Source: config.TriggerIMAP, Playbook: "triage-issue",
			IMAP: config.IMAP{Host: "imap.example.org", User: "me@example.org", Password: "mail-password", From: []string{"alice@example.org"}, TLSCA: ca}}}
		_, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
			Tasks: task.Open(f.in, nil), Runner: f.runner, Now: time.Now, Secret: func(string) ([]byte, error) { return []byte("pw"), nil }})
		if err == nil || !strings.Contains(err.Error(), "tls_ca "+ca) || errs.AdviceOf(err).Kind != BadMailCA {
			t.Errorf("%s: %v", ca, err)
		}
	}
}

// TestMailWaitsForRoom: mail beyond the trigger's queue (max_queue) is
// not dropped and does not take the mailbox down: it waits unread, the
// owner is told once, and it is queued as runs end, never more than
// max_queue waiting; every message runs once, in order.
func TestMailWaitsForRoom(t *testing.T) {
	f, d, key, _ := mailFixture(t, 1)
	tr := f.cfg.Triggers["inbox"]
	tr.MaxQueue = 2
	f.cfg.Triggers["inbox"] = tr
	f.runner.gate = make(chan struct{})
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: time.Now,
		Secret: func(string) ([]byte, error) { return []byte(d.Password), nil },
		Mail:   MailOptions{LookupTXT: mailtest.DNS(key), Tune: func(w *mail.Watcher) { w.HoldRetry = 50 * time.Millisecond }}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	defer stop()
	f.waitWatching()
	const n = 6
	for i := range n {
		d.Deliver(t, key.Sign(mailtest.Message("alice@example.org", "h@test", fmt.Sprintf("m%d", i), "x")))
	}
	w := f.waitNotice("mail:inbox:")
	if !strings.HasPrefix(w.ID, "mail:inbox:waiting:queue:") || !strings.Contains(w.Text, "queue") {
		t.Errorf("the owner's notice: %+v", w)
	}
	time.Sleep(time.Second)
	if q := len(f.jobs()); q != 3 || f.runner.count() != 1 { // one running, max_queue waiting
		t.Errorf("%d jobs on disk, %d runs started (want 3, 1)", q, f.runner.count())
	}
	close(f.runner.gate)
	for range n {
		f.waitNotice("task:")
	}
	if titles := f.runner.titles(); strings.Join(titles, ",") != "m0,m1,m2,m3,m4,m5" {
		t.Errorf("runs: %v", titles)
	}
	f.ch.mu.Lock()
	defer f.ch.mu.Unlock()
	for _, nt := range f.ch.notices {
		if strings.HasPrefix(nt.ID, "mail:inbox:") && nt.ID != w.ID {
			t.Errorf("another mail notice: %+v", nt)
		}
	}
}

// titles are the titles of the events the runner was given, in order.
func (f *fakeRunner) titles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Title)
	}
	return out
}
