package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel/telegram/telegramtest"
)

// holdProbeScript asks for hosts outside the policy, one step at a time,
// writing each answer (with the milliseconds it took) to $W/out, then 20
// hosts at once to $W/out.many.
const holdProbeScript = `set -u
W=/home/dev/hobbs/workspace
touch $W/.probe-started
step() { netprobe held "$1" "$2" >> $W/out; }
step once1 'http://once.test:8080/a?token=hunter2'
step once2 http://once.test:8080/b
step sess1 http://sess.test:8080/a
step sess2 http://sess.test:8080/b
step late http://late.test:8080/x
i=1; while [ $i -le 20 ]; do netprobe held many$i http://h$i.test:8080/ >> $W/out.many & i=$((i+1)); done
wait
touch $W/.probe-done
`

// heldQuestion is a question as hobbs approvals --json lists it.
type heldQuestion struct {
	ID, Session, Method, Host, Path string
	Port                            int
	Tainted                         bool
	Answers                         []string
}

// approvals lists the questions waiting, as the owner sees them.
func (e *env) approvals(t *testing.T) []heldQuestion {
	t.Helper()
	r := e.hobbs(nil, "approvals", "--json")
	if r.code != 0 {
		t.Fatalf("hobbs approvals: %d %s", r.code, r.stderr)
	}
	var qs []heldQuestion
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil {
		t.Fatalf("hobbs approvals --json: %v\n%s", err, r.stdout)
	}
	return qs
}

// upstreamWith runs netprobe's web server on a network of its own under
// the names given, and returns the network (the proxy joins it).
func upstreamWith(t *testing.T, name string, aliases ...string) string {
	t.Helper()
	upNet := name + "-up"
	docker(t, "network", "create", "--label", "hobbs-e2e="+runID, upNet)
	t.Cleanup(func() { docker(t, "network", "rm", upNet) })
	args := []string{"run", "-d", "--name", name + "-upstream", "--label", "hobbs-e2e=" + runID, "--network", upNet}
	for _, a := range aliases {
		args = append(args, "--network-alias", a)
	}
	docker(t, append(args, baseImage, "netprobe", "serve", ":8080")...)
	t.Cleanup(func() { docker(t, "rm", "-f", name+"-upstream") })
	return upNet
}

// TestHeldRequests: a session's requests to hosts outside its policy wait
// while the owner is asked on the host (hobbs approvals), and go as the
// owner answers: Once, then asked again and Deny; This session; no answer
// (refused at the hold's end); 20 hosts at once (8 questions, the rest
// refused at once, saying why).
func TestHeldRequests(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "hold")
	aliases := []string{"once.test", "sess.test", "late.test"}
	for i := 1; i <= 20; i++ {
		aliases = append(aliases, fmt.Sprintf("h%d.test", i))
	}
	upNet := upstreamWith(t, name, aliases...)
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains: []\n"+privateRanges)
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "egress_network: "+upNet+"\negress:\n  hold: 4s\n")

	c, out, errb := e.startProbe(t, name, holdProbeScript)
	done := filepath.Join(e.ws, ".probe-done")
	seen := map[string]heldQuestion{} // by id
	onceAsked := 0
	var many []string
	manyDenied := false
	deadline := time.Now().Add(3 * time.Minute)
	for !exists(done) {
		if time.Now().After(deadline) {
			t.Fatalf("the probe did not finish; its output so far:\n%s", readOr(filepath.Join(e.ws, "out")))
		}
		for _, q := range e.approvals(t) {
			if _, ok := seen[q.ID]; ok {
				continue
			}
			seen[q.ID] = q
			if q.Session != name || q.Method != "GET" || q.Port != 8080 {
				t.Errorf("question %+v: want session %s, GET, port 8080", q, name)
			}
			answer := func(args ...string) {
				if r := e.hobbs(nil, append([]string{"approvals"}, args...)...); r.code != 0 {
					t.Fatalf("hobbs approvals %v: %d %s", args, r.code, r.stderr)
				}
			}
			switch {
			case q.Host == "once.test":
				onceAsked++
				if onceAsked == 1 {
					if q.Path != "/a" || strings.Contains(fmt.Sprint(q), "hunter2") {
						t.Errorf("question %+v: want path /a without its query", q)
					}
					answer("allow", q.ID)
				} else {
					answer("deny", q.ID)
				}
			case q.Host == "sess.test":
				answer("allow", q.ID, "--session")
			case strings.HasPrefix(q.Host, "h"):
				many = append(many, q.ID)
			}
		}
		// The 20: once 8 ask and the other 12 are refused, deny the 8.
		if !manyDenied && len(many) == 8 && strings.Count(readOr(filepath.Join(e.ws, "out.many")), "\n") == 12 {
			manyDenied = true
			for _, id := range many {
				if r := e.hobbs(nil, "approvals", "deny", id); r.code != 0 {
					t.Fatalf("deny %s: %s", id, r.stderr)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("session: %v\n%s\n%s", err, out.String(), errb.String())
	}
	steps := map[string]string{}
	for _, l := range strings.Split(readOr(filepath.Join(e.ws, "out")), "\n") {
		if tag, rest, ok := strings.Cut(l, " "); ok {
			steps[tag] = rest
		}
	}
	t.Logf("steps: %v", steps)
	want := func(tag, sub string) {
		t.Helper()
		if !strings.Contains(steps[tag], sub) {
			t.Errorf("%s = %q, want %q", tag, steps[tag], sub)
		}
	}
	want("once1", "status=200 body=upstream-ok")
	want("once2", "status=403")
	want("once2", "the owner denied it (on the host)")
	want("sess1", "status=200")
	want("sess2", "status=200")
	want("late", "status=403")
	want("late", "no answer from the owner within 4s")
	want("late", "hobbs policy allow late.test:8080")
	if onceAsked != 2 {
		t.Errorf("once.test was asked %d times; want twice (Once lets one request through)", onceAsked)
	}
	sessAsked := 0
	for _, q := range seen {
		if q.Host == "sess.test" {
			sessAsked++
		}
	}
	if sessAsked != 1 {
		t.Errorf("sess.test was asked %d times; want once (This session)", sessAsked)
	}
	if ms := msOf(steps["once2"]); ms >= 4000 {
		t.Errorf("Deny took %d ms: not at once", ms)
	}
	if ms := msOf(steps["late"]); ms < 4000 || ms > 5000 {
		t.Errorf("unanswered: refused after %d ms; want the hold (4 s) to hold + 1 s", ms)
	}
	// The 20: 8 asked (and denied), 12 refused at once with the reason.
	var limited, denied int
	for _, l := range strings.Split(strings.TrimSpace(readOr(filepath.Join(e.ws, "out.many"))), "\n") {
		switch {
		case strings.Contains(l, "not held: 8 questions already wait in this session"):
			limited++
			if ms := msOf(l); ms >= 4000 {
				t.Errorf("refused for the limit after %d ms: not at once: %s", ms, l)
			}
		case strings.Contains(l, "the owner denied it"):
			denied++
		default:
			t.Errorf("unexpected: %s", l)
		}
	}
	if len(many) != 8 || limited != 12 || denied != 8 {
		t.Errorf("20 hosts: %d questions, %d refused for the limit, %d denied; want 8, 12, 8", len(many), limited, denied)
	}
	// Audited; no question outlives its session.
	b, _ := os.ReadFile(filepath.Join(e.inst, "logs", "egress", "audit.log"))
	for _, ev := range []string{`"event":"egress.hold"`, `"event":"egress.answer","subject":"once.test:8080","outcome":"once"`,
		`"event":"egress.answer","subject":"late.test:8080","outcome":"expired"`} {
		if !strings.Contains(string(b), ev) {
			t.Errorf("egress audit lacks %s", ev)
		}
	}
	hb, _ := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
	if !strings.Contains(string(hb), `"event":"egress.answer"`) || !strings.Contains(string(hb), `"via":"host"`) {
		t.Errorf("host audit lacks the answers:\n%s", hb)
	}
	if exists(filepath.Join(e.inst, "logs", "egress", "approvals", name)) {
		t.Errorf("the session's questions outlived it")
	}
	if qs := e.approvals(t); len(qs) != 0 {
		t.Errorf("questions left after the session: %+v", qs)
	}
}

// msOf is the ms=N of a probe line.
func msOf(l string) int {
	for _, f := range strings.Fields(l) {
		if v, ok := strings.CutPrefix(f, "ms="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

func readOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// holdPhoneScript asks for two hosts outside the policy, one after the
// other.
const holdPhoneScript = `set -u
W=/home/dev/hobbs/workspace
touch $W/.probe-started
netprobe held p1 http://phone.test:8080/a >> $W/out
netprobe held p2 http://both.test:8080/b >> $W/out
touch $W/.probe-done
`

// TestHeldRequestOnTelegram: with hobbs serve's Telegram channel (the
// FAKE Bot API server), a held request's question reaches the owner with
// its answers as buttons; a stranger's press does nothing; the owner's
// Once lets it through. The session has then read from an untrusted host:
// its next question has no Always. That one is answered on the host first;
// the owner's later press is told so.
func TestHeldRequestOnTelegram(t *testing.T) {
	name := sessionName(t, "holdtg")
	var fake *telegramtest.Fake
	s := newServeEnv(t, 1, "0s", func(e *env) string {
		fake = telegramtest.NewFake(t, "")
		if r := e.hobbs([]byte(telegramtest.Token), "vault", "set", "telegram-bot"); r.code != 0 {
			t.Fatalf("vault set telegram-bot: %s", r.stderr)
		}
		upNet := upstreamWith(t, name, "phone.test", "both.test")
		writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains: []\n"+privateRanges)
		return "egress_network: " + upNet + "\negress:\n  hold: 60s\nchannels:\n  telegram:\n    token: telegram-bot\n    api_url: " + fake.URL + "\n"
	})
	code := s.pair(t)
	fake.Send(owner, "/start "+code)
	fake.Wait(t, time.Minute, "the owner to be paired", func(v telegramtest.View) bool { return len(v.Sent(owner)) > 0 })

	c, out, errb := s.startProbe(t, name, holdPhoneScript)
	question := func(host string) telegramtest.Sent {
		var q telegramtest.Sent
		fake.Wait(t, time.Minute, "the question about "+host, func(v telegramtest.View) bool {
			for _, m := range v.Sent(owner) {
				if strings.Contains(m.Text, host) && len(m.Keyboard) > 0 {
					q = m
					return true
				}
			}
			return false
		})
		return q
	}
	labels := func(m telegramtest.Sent) []string {
		var l []string
		for _, row := range m.Keyboard {
			l = append(l, row[0].Text)
		}
		return l
	}
	button := func(m telegramtest.Sent, label string) string {
		for _, row := range m.Keyboard {
			if row[0].Text == label {
				return row[0].CallbackData
			}
		}
		t.Fatalf("no %s button on %q: %v", label, m.Text, labels(m))
		return ""
	}
	answered := func(m telegramtest.Sent) string {
		var text string
		fake.Wait(t, time.Minute, "the press to be answered", func(v telegramtest.View) bool {
			for _, x := range v.Sent(owner) {
				if x.ID == m.ID && x.Edits > 0 {
					text = x.Text
					return true
				}
			}
			return false
		})
		return text
	}

	q1 := question("phone.test:8080")
	for _, want := range []string{"Session " + name + " (terminal)", `GET phone.test:8080, path "/a"`, "1 request waits"} {
		if !strings.Contains(q1.Text, want) {
			t.Errorf("question lacks %q:\n%s", want, q1.Text)
		}
	}
	if got := strings.Join(labels(q1), ","); got != "Once,This session,Always,Deny" {
		t.Errorf("buttons %s; want Once,This session,Always,Deny", got)
	}
	// The stranger's press (Always) counts for nothing: the owner's Once,
	// handled after it, is the answer.
	fake.Press(owner, stranger, q1.ID, button(q1, "Always"))
	fake.Press(owner, owner, q1.ID, button(q1, "Once"))
	if text := answered(q1); !strings.Contains(text, "Once: "+name+" may reach phone.test:8080 this once") {
		t.Errorf("after the owner's Once the message says:\n%s", text)
	}

	// Tainted now (it read from phone.test): no Always.
	q2 := question("both.test:8080")
	if got := strings.Join(labels(q2), ","); got != "Once,This session,Deny" {
		t.Errorf("tainted session's buttons %s; want Once,This session,Deny", got)
	}
	if !strings.Contains(q2.Text, "It is tainted (read from phone.test:8080)") {
		t.Errorf("tainted question does not say why:\n%s", q2.Text)
	}
	qs := s.approvals(t)
	if len(qs) != 1 || qs[0].Host != "both.test" {
		t.Fatalf("waiting on the host: %+v", qs)
	}
	if r := s.hobbs(nil, "approvals", "allow", qs[0].ID, "--session"); r.code != 0 {
		t.Fatalf("approvals allow --session: %s", r.stderr)
	}
	fake.Press(owner, owner, q2.ID, button(q2, "Deny"))
	if text := answered(q2); !strings.Contains(text, "already answered on the host: session") {
		t.Errorf("the phone was not told of the host's answer:\n%s", text)
	}

	waitFor(t, 2*time.Minute, "the probe to finish", func() bool { return exists(filepath.Join(s.ws, ".probe-done")) })
	if err := c.Wait(); err != nil {
		t.Fatalf("session: %v\n%s\n%s", err, out.String(), errb.String())
	}
	steps := readOr(filepath.Join(s.ws, "out"))
	if !strings.Contains(steps, "p1 ms=") || !strings.Contains(steps, "p2 ms=") || strings.Count(steps, "status=200") != 2 {
		t.Errorf("the requests: %s", steps)
	}
	if m := fake.Sent(stranger); len(m) != 0 {
		t.Errorf("the stranger got answers: %+v", m)
	}
	b, _ := os.ReadFile(filepath.Join(s.inst, "logs", "egress", "audit.log"))
	if !strings.Contains(string(b), "answered on the telegram by telegram:4242") {
		t.Errorf("the egress audit does not say who answered where:\n%s", b)
	}
}

// TestHeldRequestAlwaysFromRun: a headless run of a playbook whose run:
// block does not name a host the instance allows is held there; the
// owner's Always on the host adds the host to the run: block, renews the
// playbook's approval (audited), and lets the request through. The next
// run reaches the host unasked.
func TestHeldRequestAlwaysFromRun(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "holdrun")
	upNet := upstreamWith(t, name, "extra.test")
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains: [extra.test:8080]\n"+privateRanges)
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf("image: %s\nbase_image: %s\nworkspace: %s\negress_network: %s\negress:\n  hold: 60s\n",
		image, baseImage, e.ws, upNet))
	e.approvedPlaybook(t, "fetcher", "autonomous", "5m", "Fetch the data.")
	writeFile(t, filepath.Join(e.ws, ".fake-claude-run"), `echo "fetch=$(netprobe held x http://extra.test:8080/data)" >&2
echo "## Outcome"
echo "ok - fetched"
`)
	grant := func() string { return readOr(filepath.Join(e.inst, "grants", "fetcher.json")) }
	before := grant()

	c := e.command(nil, "playbook", "run", "fetcher")
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	e.start(t, c)
	var q heldQuestion
	waitFor(t, 2*time.Minute, "the run's question", func() bool {
		for _, x := range e.approvals(t) {
			if x.Host == "extra.test" {
				q = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(strings.Join(q.Answers, ","), "always") || q.Tainted {
		t.Fatalf("the run's question %+v: want Always offered (an owner's run, untainted)", q)
	}
	r := e.hobbs(nil, "approvals", "allow", q.ID, "--always")
	if r.code != 0 || !strings.Contains(r.stderr, "playbook fetcher's run: block gains it when the run ends") {
		t.Fatalf("approvals allow --always: %d %s", r.code, r.stderr)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("playbook run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "fetch=x ms=") || !strings.Contains(errb.String(), "status=200 body=upstream-ok") {
		t.Errorf("the held request did not go through:\n%s", errb.String())
	}
	pb := readOr(filepath.Join(e.inst, "playbooks", "fetcher.md"))
	if !strings.Contains(pb, "extra.test:8080") {
		t.Errorf("the run: block did not gain the host:\n%s", pb)
	}
	after := grant()
	if after == before || !strings.Contains(after, "extra.test:8080") {
		t.Errorf("the approval was not renewed with the host:\nbefore %s\nafter %s", before, after)
	}
	aud := readOr(filepath.Join(e.inst, "logs", "audit.log"))
	for _, want := range []string{`"event":"playbook.allow","subject":"fetcher"`, `"event":"egress.answer"`, `"wrote":"playbook fetcher"`} {
		if !strings.Contains(aud, want) {
			t.Errorf("audit lacks %s:\n%s", want, aud)
		}
	}

	// The next run: no question.
	r = e.hobbs(nil, "playbook", "run", "fetcher")
	if r.code != 0 || !strings.Contains(r.stderr, "status=200 body=upstream-ok") {
		t.Fatalf("the next run: %d\n%s", r.code, r.stderr)
	}
	if ms := msOf(between(r.stderr, "fetch=", "\n")); ms < 0 || ms > 10000 {
		t.Errorf("the next run's request took %d ms", ms)
	}
}
