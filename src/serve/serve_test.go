package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/task"
)

const secret = "It's a Secret to Everybody"

// fakeRunner stands for the launcher: it records the runs it is given and,
// when gate is set, holds each until gate is closed or its context ends.
type fakeRunner struct {
	mu         sync.Mutex
	perBook    map[string]int
	overlap    bool
	jobs       []Job
	events     []Event
	now, most  int
	gate       chan struct{}
	started    chan string
	checkErr   error
	stoppedCtx int
}

func (f *fakeRunner) Check(string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkErr
}

func (f *fakeRunner) Run(ctx context.Context, j Job, event []byte) (Result, error) {
	var e Event
	if err := json.Unmarshal(event, &e); err != nil {
		return Result{}, err
	}
	f.mu.Lock()
	f.jobs, f.events = append(f.jobs, j), append(f.events, e)
	f.now++
	if f.now > f.most {
		f.most = f.now
	}
	if f.perBook == nil {
		f.perBook = map[string]int{}
	}
	f.perBook[j.Playbook]++
	f.overlap = f.overlap || f.perBook[j.Playbook] > 1
	f.mu.Unlock()
	if f.started != nil {
		f.started <- j.ID
	}
	var err error
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			err = ctx.Err()
			f.mu.Lock()
			f.stoppedCtx++
			f.mu.Unlock()
		}
	}
	f.mu.Lock()
	f.now--
	f.perBook[j.Playbook]--
	f.mu.Unlock()
	if err != nil {
		return Result{Outcome: task.Failed, Why: "stopped"}, err
	}
	return Result{Outcome: task.OK, CostUSD: 0.25, Turns: 3, Report: "## Outcome\nok — triaged\n\n## What happened\n- labelled", Review: true}, nil
}

func (f *fakeRunner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

// fakeChannel stands for a messaging channel: it records what it is
// handed.
type fakeChannel struct {
	mu      sync.Mutex
	notices []channel.Notice
	got     chan channel.Notice
}

func (c *fakeChannel) Name() string { return "fake" }
func (c *fakeChannel) Run(ctx context.Context, h channel.Host) error {
	<-ctx.Done()
	return nil
}
func (c *fakeChannel) Deliver(n channel.Notice) error {
	c.mu.Lock()
	c.notices = append(c.notices, n)
	c.mu.Unlock()
	if c.got != nil {
		c.got <- n
	}
	return nil
}

type fixture struct {
	t      testing.TB
	in     instance.Instance
	cfg    *config.Config
	runner *fakeRunner
	ch     *fakeChannel
	clock  time.Time
	mu     sync.Mutex
	drain  time.Duration
}

func newFixture(t testing.TB, debounce string) *fixture {
	in, err := instance.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(in.Tasks(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(in.Playbooks(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, pb := range []string{"triage-issue", "label-issue"} {
		if err := os.WriteFile(in.Playbook(pb), []byte("---\ntitle: Triage\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Triggers = map[string]config.Trigger{
		"new-issues": {Source: config.TriggerGitHub, Secret: "webhook-github", Playbook: "triage-issue", Events: []string{"issues"}, Debounce: debounce},
		"lab":        {Source: config.TriggerGitLab, Secret: "webhook-gitlab", Playbook: "triage-issue", Events: []string{"Issue Hook"}},
		"plain":      {Source: config.TriggerGeneric, Secret: "webhook-generic", Playbook: "triage-issue", Events: []string{"ping"}},
		"labels":     {Source: config.TriggerGitHub, Secret: "webhook-github", Playbook: "label-issue", Events: []string{"issues"}},
	}
	return &fixture{t: t, in: in, cfg: cfg, runner: &fakeRunner{}, ch: &fakeChannel{}, clock: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
}

func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.clock = f.clock.Add(d)
	f.mu.Unlock()
}

func (f *fixture) service() *Service {
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: audit.New(f.in.FS(), f.in.AuditLog()),
		Tasks: task.Open(f.in, nil), Runner: f.runner, Channels: []channel.Channel{f.ch}, Now: f.now, DrainTimeout: f.drain,
		Secret: func(string) ([]byte, error) { return []byte(secret), nil }})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// issue is a GitHub issues delivery's body about issue n.
func issue(n int, sender string) []byte {
	return []byte(fmt.Sprintf(`{"action":"opened","issue":{"number":%d,"title":"Crash on start","html_url":"https://github.com/o/r/issues/%d"},"repository":{"full_name":"o/r"},"sender":{"login":%q,"type":"User"}}`, n, n, sender))
}

// github makes a GitHub delivery of body, signed with key ("" for none).
func github(body []byte, event, delivery, key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/new-issues", bytes.NewReader(body))
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", delivery)
	if key != "" {
		r.Header.Set("X-Hub-Signature-256", Sign([]byte(key), body))
	}
	return r
}

func send(s *Service, r *http.Request) (int, reply) {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var rep reply
	_ = json.Unmarshal(w.Body.Bytes(), &rep)
	return w.Code, rep
}

// jobs reads the queue on disk, as the next service would.
func (f *fixture) jobs() []*Job {
	q, problems, err := loadQueue(store{in: f.in})
	if err != nil || len(problems) > 0 {
		f.t.Fatal(err, problems)
	}
	var out []*Job
	for _, j := range q.list() {
		out = append(out, &j)
	}
	return out
}

func (f *fixture) auditHas(want ...string) {
	b, _ := os.ReadFile(f.in.AuditLog())
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			f.t.Errorf("the audit log lacks %q:\n%s", w, b)
		}
	}
}

// Signatures: a good one queues a run and answers its task; a bad, a
// missing one or one of another algorithm is 401, audited, and queues
// nothing. GitLab's token and a generic source's HMAC likewise.
func TestSignatures(t *testing.T) {
	body := issue(7, "alice")
	sha1 := httptest.NewRequest(http.MethodPost, "/hooks/new-issues", bytes.NewReader(body))
	sha1.Header.Set("X-GitHub-Event", "issues")
	sha1.Header.Set("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567")
	sha1.Header.Set("X-Hub-Signature-256", "sha1=0123456789abcdef0123456789abcdef01234567")
	lab := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hooks/lab", strings.NewReader(`{"object_kind":"issue","project":{"path_with_namespace":"o/r"},"object_attributes":{"iid":3},"user":{"username":"bob"}}`))
		r.Header.Set("X-Gitlab-Event", "Issue Hook")
		r.Header.Set("X-Gitlab-Event-UUID", "uuid-"+token)
		if token != "" {
			r.Header.Set("X-Gitlab-Token", token)
		}
		return r
	}
	plain := func(key string) *http.Request {
		b := []byte(`{"hello":"world"}`)
		r := httptest.NewRequest(http.MethodPost, "/hooks/plain", bytes.NewReader(b))
		r.Header.Set("X-Hub-Event", "ping")
		r.Header.Set("X-Hub-Signature-256", Sign([]byte(key), b))
		return r
	}
	tampered := github(body, "issues", "d-tampered", secret)
	tampered.Body = httpBody(append(bytes.Clone(body[:len(body)-1]), []byte(`,"x":1}`)...))
	cases := []struct {
		name string
		r    *http.Request
		code int
	}{
		{"good", github(body, "issues", "d-good", secret), http.StatusAccepted},
		{"bad key", github(body, "issues", "d-bad", "guess"), http.StatusUnauthorized},
		{"missing", github(body, "issues", "d-missing", ""), http.StatusUnauthorized},
		{"sha1", sha1, http.StatusUnauthorized},
		{"tampered body", tampered, http.StatusUnauthorized},
		{"gitlab good", lab(secret), http.StatusAccepted},
		{"gitlab bad", lab("guess"), http.StatusUnauthorized},
		{"gitlab missing", lab(""), http.StatusUnauthorized},
		{"generic good", plain(secret), http.StatusAccepted},
		{"generic bad", plain("guess"), http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "")
			s := f.service()
			code, rep := send(s, c.r)
			if code != c.code {
				t.Fatalf("code %d, want %d (%+v)", code, c.code, rep)
			}
			jobs := f.jobs()
			if c.code == http.StatusAccepted {
				if rep.Status != "queued" || rep.Job == "" || len(jobs) != 1 || jobs[0].ID != rep.Job {
					t.Fatalf("reply %+v, jobs %+v", rep, jobs)
				}
				return
			}
			if len(jobs) != 0 {
				t.Fatalf("queued %+v", jobs[0])
			}
			f.auditHas(`"event":"serve.hook"`, `"outcome":"refused"`, `"reason":"bad signature"`)
		})
	}
}

func httpBody(b []byte) *readCloser { return &readCloser{bytes.NewReader(b)} }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// A delivery id seen in the last 24 hours is refused (409), also by a
// service started afterwards; after the window it is taken again.
func TestReplay(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	if code, _ := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusAccepted {
		t.Fatalf("first: %d", code)
	}
	if code, rep := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusConflict || rep.Status != "refused" {
		t.Fatalf("replay: %d %+v", code, rep)
	}
	f.auditHas(`"reason":"replay: delivery seen in the last 24h"`)
	s2 := f.service()
	if code, _ := send(s2, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusConflict {
		t.Fatalf("replay after a restart: %d", code)
	}
	if n := len(f.jobs()); n != 1 {
		t.Fatalf("%d jobs", n)
	}
	f.advance(ReplayWindow + time.Second)
	if code, _ := send(s2, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusAccepted {
		t.Fatalf("after the window: %d", code)
	}
}

// A body over 1 MiB is refused (413) before its signature is even
// checked, with or without a Content-Length; nothing is queued.
func TestOversize(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	big := append(issue(1, "alice"), bytes.Repeat([]byte(" "), MaxBody)...)
	if code, _ := send(s, github(big, "issues", "d-big", secret)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("code %d", code)
	}
	r := github(big, "issues", "d-big2", secret)
	r.ContentLength = -1 // chunked: the reader stops it
	if code, _ := send(s, r); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: code %d", code)
	}
	exact := append(issue(2, "alice"), bytes.Repeat([]byte(" "), MaxBody-len(issue(2, "alice")))...)
	if code, _ := send(s, github(exact, "issues", "d-exact", secret)); code != http.StatusAccepted {
		t.Fatalf("exactly 1 MiB: code %d", code)
	}
	if n := len(f.jobs()); n != 1 {
		t.Fatalf("%d jobs", n)
	}
	f.auditHas(`"reason":"body over 1 MiB"`)
}

// An event the trigger does not list is answered 202 and ignored; so is a
// bot's delivery, unless the trigger takes bots.
func TestIgnoredEventAndBots(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	if code, rep := send(s, github(issue(1, "alice"), "push", "d-push", secret)); code != http.StatusAccepted || rep.Status != "ignored" {
		t.Fatalf("push: %d %+v", code, rep)
	}
	bot := []byte(`{"action":"opened","issue":{"number":2},"repository":{"full_name":"o/r"},"sender":{"login":"dependabot[bot]","type":"Bot"}}`)
	if code, rep := send(s, github(bot, "issues", "d-bot", secret)); code != http.StatusAccepted || rep.Status != "ignored" || rep.Reason != "sent by a bot" {
		t.Fatalf("bot: %d %+v", code, rep)
	}
	if n := len(f.jobs()); n != 0 {
		t.Fatalf("%d jobs", n)
	}
	no := false
	tr := f.cfg.Triggers["new-issues"]
	tr.IgnoreBots = &no
	f.cfg.Triggers["new-issues"] = tr
	s = f.service()
	if code, rep := send(s, github(bot, "issues", "d-bot2", secret)); code != http.StatusAccepted || rep.Status != "queued" {
		t.Fatalf("bot taken: %d %+v", code, rep)
	}
}

// A playbook that may not run (not approved, wrong stage) refuses the
// delivery (403), queues nothing, tells the owner, and leaves the delivery
// id unrecorded, so the sender may deliver it again.
func TestRefusedPlaybook(t *testing.T) {
	f := newFixture(t, "")
	f.runner.checkErr = fmt.Errorf("triage-issue changed since its approval")
	s := f.service()
	if code, _ := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusForbidden {
		t.Fatalf("code %d", code)
	}
	if len(f.jobs()) != 0 || len(f.ch.notices) != 1 || !strings.Contains(f.ch.notices[0].Text, "changed since its approval") {
		t.Fatalf("jobs %v, notices %+v", f.jobs(), f.ch.notices)
	}
	// Once the playbook may run, the sender's redelivery (the same id) is
	// taken; a second one is a replay.
	f.runner.checkErr = nil
	if code, _ := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusAccepted {
		t.Fatalf("redelivery: %d", code)
	}
	if code, _ := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusConflict {
		t.Fatalf("replay: %d", code)
	}
}

// run starts s on a loopback listener; stop ends it and waits for the
// drain.
func run(t *testing.T, s *Service) (stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// Debounce: deliveries about one issue within the window make one run
// (with the latest event); another issue makes its own; the runs start
// once the window has passed.
func TestDebounce(t *testing.T) {
	f := newFixture(t, "10s")
	f.runner.started = make(chan string, 10)
	s := f.service()
	stop := run(t, s)
	var tasks []string
	for i, n := range []int{5, 5, 6, 5} {
		code, rep := send(s, github(issue(n, fmt.Sprintf("user%d", i)), "issues", fmt.Sprintf("d-%d", i), secret))
		if code != http.StatusAccepted || rep.Status != "queued" {
			t.Fatalf("delivery %d: %d %+v", i, code, rep)
		}
		tasks = append(tasks, rep.Job)
	}
	if tasks[0] != tasks[1] || tasks[0] != tasks[3] || tasks[0] == tasks[2] {
		t.Fatalf("tasks %v", tasks)
	}
	if n := f.runner.count(); n != 0 {
		t.Fatalf("%d runs started inside the window", n)
	}
	f.advance(11 * time.Second)
	s.kick()
	got := map[string]bool{<-f.runner.started: true, <-f.runner.started: true}
	if !got[tasks[0]] || !got[tasks[2]] {
		t.Fatalf("started %v", got)
	}
	stop()
	if n := f.runner.count(); n != 2 {
		t.Fatalf("%d runs", n)
	}
	for i, j := range f.runner.jobs {
		if j.ID == tasks[0] {
			if len(j.Deliveries) != 3 || f.runner.events[i].Sender != "user3" {
				t.Fatalf("debounced run: %+v, event from %s", j, f.runner.events[i].Sender)
			}
		}
	}
}

// At most serve.max_runs run at once, never two of one playbook; every
// queued run runs; each end is
// delivered with outcome, cost, the report's first lines and, for a
// supervised run, Approve and Reject.
func TestConcurrencyCapAndDelivery(t *testing.T) {
	f := newFixture(t, "")
	f.cfg.Serve.MaxRuns = 2
	f.runner.gate = make(chan struct{})
	f.runner.started = make(chan string, 10)
	f.ch.got = make(chan channel.Notice, 10)
	s := f.service()
	stop := run(t, s)
	for i := 0; i < 6; i++ {
		r := github(issue(i+1, "alice"), "issues", fmt.Sprintf("d-%d", i), secret)
		if i%2 == 1 {
			r.URL.Path = "/hooks/labels"
		}
		if code, _ := send(s, r); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d", i, code)
		}
	}
	<-f.runner.started
	<-f.runner.started
	st, _ := s.Status(context.Background())
	if !strings.HasPrefix(st, "2 running (at most 2 at once), 4 waiting") {
		t.Fatalf("status %q", st)
	}
	close(f.runner.gate)
	for i := 0; i < 4; i++ {
		<-f.runner.started
	}
	var ends []channel.Notice
	for i := 0; i < 6; i++ {
		ends = append(ends, <-f.ch.got)
	}
	stop()
	if f.runner.most != 2 || f.runner.count() != 6 || f.runner.overlap {
		t.Fatalf("at most %d at once, %d runs, two runs of one playbook at once: %v", f.runner.most, f.runner.count(), f.runner.overlap)
	}
	var n channel.Notice
	for _, e := range ends {
		if strings.HasPrefix(e.Text, "triage-issue") {
			n = e
		}
	}
	for _, want := range []string{"triage-issue (trigger new-issues): ok", "3 turns, $0.25", "ok — triaged", "hobbs task show task_"} {
		if !strings.Contains(n.Text, want) {
			t.Errorf("notice lacks %q:\n%s", want, n.Text)
		}
	}
	if len(n.Buttons) != 2 || n.Buttons[0].Kind != channel.ActApprove || n.Buttons[0].Task == "" || !strings.HasSuffix(n.ID, ":end") {
		t.Errorf("notice %+v", n)
	}
	runs, _ := s.Runs(context.Background())
	if strings.Count(runs, ": ok") != 6 {
		t.Errorf("runs:\n%s", runs)
	}
}

// A queued run survives a restart: the next service runs it, with its
// event.
func TestQueueSurvivesRestart(t *testing.T) {
	f := newFixture(t, "")
	s := f.service() // never Run: the process stops with the run queued
	_, rep := send(s, github(issue(9, "carol"), "issues", "d-9", secret))
	if rep.Job == "" {
		t.Fatalf("reply %+v", rep)
	}
	if ents, _ := os.ReadDir(f.in.Tasks()); len(ents) != 0 {
		n := len(ents)
		t.Fatalf("%d task records for a queued run: a record is made when the run starts", n)
	}
	f.runner.started = make(chan string, 1)
	s2 := f.service()
	stop := run(t, s2)
	if got := <-f.runner.started; got != rep.Job {
		t.Fatalf("ran %s, want %s", got, rep.Job)
	}
	stop()
	if e := f.runner.events[0]; e.Number != 9 || e.Sender != "carol" || e.Repository != "o/r" || !strings.Contains(e.Untrusted, "untrusted") {
		t.Fatalf("event %+v", e)
	}
	j := f.jobs()[0]
	if j.State != Done || j.Event != nil || task.ValidID(j.Task) != nil {
		t.Fatalf("the job after its run: %+v", j)
	}
}

// SIGTERM drains: the listener stops, a running run is stopped after the
// drain's bound and recorded and delivered as such, a queued one stays
// queued for the next start.
func TestDrain(t *testing.T) {
	f := newFixture(t, "")
	f.cfg.Serve.MaxRuns = 1
	f.drain = 50 * time.Millisecond
	f.runner.gate = make(chan struct{}) // never opened: the runs last
	f.runner.started = make(chan string, 2)
	f.ch.got = make(chan channel.Notice, 2)
	s := f.service()
	stop := run(t, s)
	_, first := send(s, github(issue(1, "alice"), "issues", "d-1", secret))
	_, second := send(s, github(issue(2, "alice"), "issues", "d-2", secret))
	<-f.runner.started
	stop()
	if f.runner.stoppedCtx != 1 || f.runner.count() != 1 {
		t.Fatalf("stopped %d, runs %d", f.runner.stoppedCtx, f.runner.count())
	}
	byJob := map[string]*Job{}
	for _, j := range f.jobs() {
		byJob[j.ID] = j
	}
	if j := byJob[first.Job]; j.State != Done || j.Outcome != task.Failed || !strings.Contains(j.Note, "shutting down") {
		t.Fatalf("running job after the drain: %+v", j)
	}
	if j := byJob[second.Job]; j.State != Queued || j.Task != "" {
		t.Fatalf("queued job after the drain: %+v", j)
	}
	if n := <-f.ch.got; !strings.Contains(n.Text, "shutting down") {
		t.Fatalf("notice %q", n.Text)
	}
	rec, err := task.Open(f.in, nil).Get(byJob[first.Job].Task)
	if err != nil || rec.Status != task.Failed {
		t.Fatalf("task %+v %v", rec, err)
	}
	// After the drain the listener takes nothing.
	if code, _ := send(s, github(issue(3, "alice"), "issues", "d-3", secret)); code != http.StatusServiceUnavailable {
		t.Fatalf("after the drain: %d", code)
	}
}

// A run a previous service left running (it was killed) is recorded as
// interrupted, delivered, and not run again.
func TestInterruptedRunRecovered(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	_, rep := send(s, github(issue(1, "alice"), "issues", "d-1", secret))
	tk, err := task.Open(f.in, nil).Start(task.RunTitle("triage-issue"), "hobbs", "triage-issue")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.q.update(rep.Job, func(j *Job) bool { j.State, j.Task = Running, tk.ID; return true }); err != nil {
		t.Fatal(err)
	}
	f.service()
	j := f.jobs()[0]
	if j.State != Done || !strings.Contains(j.Note, "interrupted") || len(f.ch.notices) != 1 || !strings.Contains(f.ch.notices[0].Text, "interrupted") {
		t.Fatalf("job %+v, notices %+v", j, f.ch.notices)
	}
	if rec, _ := task.Open(f.in, nil).Get(tk.ID); rec.Status != task.Failed {
		t.Fatalf("task %+v", rec)
	}
}

// Act approves a supervised run's result through the task log; Stop drops
// a queued run.
func TestActAndStop(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	log := task.Open(f.in, nil)
	tk, _ := log.Start("playbook run: triage-issue", "hobbs", "triage-issue")
	if _, err := log.Done(tk.ID, task.DoneOptions{Outcome: task.OK, Review: task.ReviewPending}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Act(context.Background(), channel.Action{Kind: channel.ActApprove, Task: tk.ID}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := log.Get(tk.ID); rec.Review != task.ReviewApproved {
		t.Fatalf("review %q", rec.Review)
	}
	if _, err := s.Act(context.Background(), channel.Action{Kind: channel.ActApprove, Task: "../x"}); err == nil {
		t.Fatal("a bad task id was taken")
	}
	_, rep := send(s, github(issue(1, "alice"), "issues", "d-1", secret))
	if _, err := s.Stop(context.Background(), rep.Job); err != nil {
		t.Fatal(err)
	}
	if j := f.jobs()[0]; j.State != Done {
		t.Fatalf("job %+v", j)
	}
	if _, err := s.Stop(context.Background(), rep.Job); err == nil {
		t.Fatal("stopped twice")
	}
	if _, err := s.Chat(context.Background(), "c", channel.Message{Text: "hi"}); err != ErrNoChat {
		t.Fatalf("chat: %v", err)
	}
}

// Never silent: the end of a run the service did not start (a schedule's)
// is delivered once, with the review's buttons for a supervised run; one
// that ended before the service first started, and one the service ran
// itself (runJob delivers it), are not.
func TestWatchDeliversOtherRuns(t *testing.T) {
	f := newFixture(t, "0s")
	s := f.service()
	tasks := task.Log{Instance: f.in, Now: f.now, Audit: audit.New(f.in.FS(), f.in.AuditLog())}
	tasks.Audit.Actor = "host:tester"
	run := func(pb string, review string) *task.Task {
		tk, err := tasks.Start(task.RunTitle(pb), "hobbs", pb)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tasks.Done(tk.ID, task.DoneOptions{Outcome: task.OK, Retro: "## Outcome\n\nok - " + pb + " done\n", Review: review}); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	run("label-issue", "")
	s.watchOnce() // the first look: only what ends from now on
	if len(f.ch.notices) != 0 {
		t.Fatalf("delivered what ended before the first start: %+v", f.ch.notices)
	}
	f.advance(time.Minute)
	nightly := run("label-issue", task.ReviewPending)
	own := run("triage-issue", "")
	s.q.mu.Lock()
	s.q.jobs["job_20261126T120000_00000001"] = &Job{ID: "job_20261126T120000_00000001", Task: own.ID, Playbook: "triage-issue", Trigger: "new-issues", State: Done}
	s.q.mu.Unlock()
	// A session can write task records and its own audit lines, never the
	// host's audit log: a forged record, or a task.done line of a
	// container's, delivers nothing.
	forged := strings.Replace(string(must(os.ReadFile(filepath.Join(f.in.Tasks(), own.ID+".md")))), own.ID, "task_20261126_099", -1)
	if err := os.WriteFile(filepath.Join(f.in.Tasks(), "task_20261126_099.md"), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	inContainer := task.Log{Instance: f.in, Now: f.now, Audit: audit.New(f.in.FS(), f.in.AuditLog())}
	inContainer.Audit.Actor = "container:dev"
	fake, err := inContainer.Start(task.RunTitle("label-issue"), "hobbs", "label-issue")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inContainer.Done(fake.ID, task.DoneOptions{Outcome: task.OK, Review: task.ReviewPending}); err != nil {
		t.Fatal(err)
	}
	s.watchOnce()
	s.watchOnce()
	if len(f.ch.notices) != 1 {
		t.Fatalf("notices %+v, want the scheduled run's end once", f.ch.notices)
	}
	n := f.ch.notices[0]
	if n.ID != "task:"+nightly.ID+":end" || !strings.Contains(n.Text, "label-issue: ok") || !strings.Contains(n.Text, "ok - label-issue done") ||
		len(n.Buttons) != 2 || n.Buttons[0].Kind != channel.ActApprove || n.Buttons[0].Task != nightly.ID {
		t.Errorf("the notice: %+v", n)
	}
	// A restart delivers nothing twice.
	f.service().watchOnce()
	if len(f.ch.notices) != 1 {
		t.Errorf("a restart delivered again: %+v", f.ch.notices[1:])
	}
}

// A run the proxy refused hosts ends with one notice a host, each asking
// to allow it for the playbook or leave it refused; past five, one notice
// says how many more.
func TestDeniedNotices(t *testing.T) {
	hosts := []string{"a.example", "b.example:8443", "c.example", "d.example", "e.example", "f.example", "g.example"}
	ns := deniedNotices("task_20261126_001", "triage-issue", hosts)
	if len(ns) != 6 {
		t.Fatalf("%d notices, want 5 and one for the rest: %+v", len(ns), ns)
	}
	n := ns[1]
	if n.ID != "task:task_20261126_001:denied:b.example:8443" || !strings.Contains(n.Text, "was refused b.example:8443") || len(n.Buttons) != 2 ||
		n.Buttons[0] != (channel.Action{Kind: channel.ActAllowHost, Label: "allow b.example:8443 for triage-issue", Playbook: "triage-issue", Host: "b.example:8443"}) ||
		n.Buttons[1].Kind != channel.ActDenyHost {
		t.Errorf("a host's notice: %+v", n)
	}
	if last := ns[5]; len(last.Buttons) != 0 || !strings.Contains(last.Text, "2 more hosts were refused") {
		t.Errorf("the last notice: %+v", last)
	}
	if len(deniedNotices("t", "p", nil)) != 0 {
		t.Error("notices for a run refused nothing")
	}
}

// The owner's "allow HOST for PLAYBOOK" adds the host to the playbook's
// run: block (hobbs playbook allow, audited); "deny" changes nothing.
func TestActAllowHost(t *testing.T) {
	f := newFixture(t, "")
	if err := os.WriteFile(f.in.Playbook("label-issue"), []byte("---\ntitle: Label\nstage: supervised\nrun:\n  hosts: []\n---\n# Label\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.service()
	s.opt.Playbooks = playbook.Open(f.in, 30, nil, s.opt.Audit)
	if _, err := s.Act(context.Background(), channel.Action{Kind: channel.ActDenyHost, Playbook: "label-issue", Host: "api.example.com"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.in.Playbook("label-issue")); strings.Contains(string(b), "api.example.com") {
		t.Fatalf("deny allowed the host:\n%s", b)
	}
	got, err := s.Act(context.Background(), channel.Action{Kind: channel.ActAllowHost, Playbook: "label-issue", Host: "api.example.com"})
	if err != nil || !strings.Contains(got, "may now reach api.example.com") {
		t.Fatalf("allow: %q %v", got, err)
	}
	if b, _ := os.ReadFile(f.in.Playbook("label-issue")); !strings.Contains(string(b), "api.example.com") {
		t.Errorf("the playbook's run: block lacks the host:\n%s", b)
	}
	f.auditHas(`"event":"playbook.allow","subject":"label-issue"`)
	if _, err := s.Act(context.Background(), channel.Action{Kind: channel.ActAllowHost, Playbook: "label-issue", Host: "not a host"}); err == nil {
		t.Error("a bad host was allowed")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Sign is the X-Hub-Signature-256 value of body under secret, as GitHub
// computes it.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
