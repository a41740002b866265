package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/task"
)

// Queue bounds: strangers fill the trigger's bound (max_queue) and no more;
// beyond it a delivery is answered 503 with a JSON reason, audited as
// shed, not queued, not recorded as seen (it may be redelivered), and
// makes no task; the owner's own delivery still queues (its own lane)
// and starts first.
func TestQueueBoundAndOwnerLane(t *testing.T) {
	f := newFixture(t, "")
	tr := f.cfg.Triggers["new-issues"]
	tr.MaxQueue, tr.OwnerLogin = 3, "Owner"
	f.cfg.Triggers["new-issues"] = tr
	s := f.service()
	for i := 0; i < 3; i++ {
		if code, rep := send(s, github(issue(i+1, fmt.Sprintf("s%d", i)), "issues", fmt.Sprintf("d-%d", i), secret)); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d %+v", i, code, rep)
		}
	}
	code, rep := send(s, github(issue(10, "s9"), "issues", "d-10", secret))
	if code != http.StatusServiceUnavailable || rep.Status != "shed" || !strings.Contains(rep.Reason, "queue is full") {
		t.Fatalf("over the bound: %d %+v", code, rep)
	}
	if n := len(f.jobs()); n != 3 {
		t.Fatalf("%d jobs, want 3", n)
	}
	f.auditHas(`"outcome":"shed"`, `"sender":"s9"`)
	// Not recorded as seen: once there is room, the redelivery queues.
	shedReq := github(issue(10, "s9"), "issues", "d-10", secret)
	if seen, _ := s.st.Seen("new-issues", ReplayKeys(config.TriggerGitHub, shedReq.Header, issue(10, "s9")), f.now()); seen {
		t.Fatal("a shed delivery was recorded as seen")
	}
	if code, rep := send(s, github(issue(11, "owner"), "issues", "d-11", secret)); code != http.StatusAccepted {
		t.Fatalf("the owner's delivery: %d %+v", code, rep)
	}
	if ents, _ := filepath.Glob(filepath.Join(f.in.Tasks(), "task_*.md")); len(ents) != 0 {
		t.Fatalf("%d task records for queued runs", len(ents))
	}
	f.cfg.Serve.MaxRuns = 1
	f.runner.started = make(chan string, 1)
	f.runner.gate = make(chan struct{})
	stop := run(t, s)
	first := <-f.runner.started
	close(f.runner.gate)
	stop()
	if j, _ := s.q.find(first); !j.Owner || j.Sender != "owner" {
		t.Fatalf("started first: %+v, want the owner's", j)
	}
}

// The total bound (serve.max_queue) holds across triggers.
func TestTotalQueueBound(t *testing.T) {
	f := newFixture(t, "")
	f.cfg.Serve.MaxQueue = 2
	s := f.service()
	send(s, github(issue(1, "a"), "issues", "d-1", secret))
	r := github(issue(2, "b"), "issues", "d-2", secret)
	r.URL.Path = "/hooks/labels"
	send(s, r)
	code, rep := send(s, github(issue(3, "c"), "issues", "d-3", secret))
	if code != http.StatusServiceUnavailable || !strings.Contains(rep.Reason, "serve.max_queue") {
		t.Fatalf("over the total bound: %d %+v", code, rep)
	}
}

// Per sender: one sender starts per_sender runs of a trigger an hour, the
// next is 429; another sender is not affected; an hour later the sender
// may again; the owner is never limited per sender.
func TestPerSender(t *testing.T) {
	f := newFixture(t, "")
	tr := f.cfg.Triggers["new-issues"]
	tr.PerSender, tr.OwnerLogin = 2, "me"
	f.cfg.Triggers["new-issues"] = tr
	s := f.service()
	n := 0
	deliver := func(sender string) (int, reply) {
		n++
		return send(s, github(issue(n, sender), "issues", fmt.Sprintf("d-%d", n), secret))
	}
	for i := 0; i < 2; i++ {
		if code, rep := deliver("mallory"); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d %+v", i, code, rep)
		}
	}
	if code, rep := deliver("mallory"); code != http.StatusTooManyRequests || rep.Status != "shed" || !strings.Contains(rep.Reason, "per_sender 2") {
		t.Fatalf("third: %d %+v", code, rep)
	}
	if code, _ := deliver("alice"); code != http.StatusAccepted {
		t.Fatalf("another sender: %d", code)
	}
	for i := 0; i < 4; i++ {
		if code, rep := deliver("me"); code != http.StatusAccepted {
			t.Fatalf("the owner's delivery %d: %d %+v", i, code, rep)
		}
	}
	f.advance(time.Hour)
	if code, rep := deliver("mallory"); code != http.StatusAccepted {
		t.Fatalf("an hour later: %d %+v", code, rep)
	}
}

// The owner is told once per trigger per hour: the first notice counts
// what was shed in ShedNoticeDelay, by sender; what is shed after waits
// for the hour; status shows the shed of the last hour, also to another
// process (ReadStatus).
func TestShedNotice(t *testing.T) {
	f := newFixture(t, "")
	tr := f.cfg.Triggers["new-issues"]
	tr.MaxQueue = 1
	f.cfg.Triggers["new-issues"] = tr
	s := f.service()
	for i := 0; i < 6; i++ {
		send(s, github(issue(i+1, fmt.Sprintf("u%d", i%3)), "issues", fmt.Sprintf("d-%d", i), secret))
	}
	s.tick(f.now())
	if len(f.ch.notices) != 0 {
		t.Fatalf("told before the delay: %+v", f.ch.notices)
	}
	f.advance(DefaultShedNoticeDelay)
	s.tick(f.now())
	if len(f.ch.notices) != 1 {
		t.Fatalf("notices %+v", f.ch.notices)
	}
	n := f.ch.notices[0].Text
	for _, want := range []string{"trigger new-issues shed 5 deliveries", "from 3 senders", "u1 (2)", "u2 (2)", "u0 (1)", "queue full: 5"} {
		if !strings.Contains(n, want) {
			t.Errorf("the notice lacks %q:\n%s", want, n)
		}
	}
	send(s, github(issue(20, "u9"), "issues", "d-20", secret))
	f.advance(30 * time.Minute)
	s.tick(f.now())
	if len(f.ch.notices) != 1 {
		t.Fatalf("told twice within the hour: %+v", f.ch.notices[1:])
	}
	st, problems, err := ReadStatus(f.in, f.cfg, f.now())
	if err != nil || len(problems) > 0 || st.Shed != 6 || st.Waiting != 1 || st.Triggers[2].Name != "new-issues" || st.Triggers[2].Shed != 6 {
		t.Fatalf("status %+v %v %v", st, problems, err)
	}
	if txt, _ := s.Status(context.Background()); !strings.Contains(txt, "1 waiting (at most 50), 6 shed in the last hour") {
		t.Fatalf("/status: %q", txt)
	}
	f.advance(31 * time.Minute)
	s.tick(f.now())
	if len(f.ch.notices) != 2 || !strings.Contains(f.ch.notices[1].Text, "shed 1 deliveries") {
		t.Fatalf("the next hour's notice: %+v", f.ch.notices)
	}
}

// Refusals before the signature holds are logged and audited at most
// once a second per source address, with the count.
func TestRefusalLogBounded(t *testing.T) {
	f := newFixture(t, "")
	var log strings.Builder
	s, err := New(Options{Instance: f.in, Config: f.cfg, Audit: f.service().opt.Audit, Tasks: task.Open(f.in, nil), Runner: f.runner,
		Channels: f.service().opt.Channels, Now: f.now, Log: &log, Secret: func(string) ([]byte, error) { return []byte(secret), nil }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if code, _ := send(s, github(issue(1, "x"), "issues", fmt.Sprintf("u-%d", i), "")); code != http.StatusUnauthorized {
			t.Fatalf("unsigned: %d", code)
		}
	}
	f.advance(time.Second)
	s.tick(f.now())
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "(1 from 192.0.2.1)") || !strings.Contains(lines[1], "(999 from 192.0.2.1)") {
		t.Fatalf("log:\n%s", log.String())
	}
	b, _ := os.ReadFile(f.in.AuditLog())
	if n := strings.Count(string(b), `"reason":"bad signature"`); n != 2 {
		t.Fatalf("%d audit lines", n)
	}
}

// A queue in the older format (queue.json, the events in
// events/, the task made at queueing) is converted on start: nothing
// lost. The fixture is in that format as it was written.
func TestConvertOldQueue(t *testing.T) {
	f := newFixture(t, "")
	tasks := task.Open(f.in, nil)
	mk := func() string {
		tk, err := tasks.Start(task.RunTitle("triage-issue"), "hobbs", "triage-issue")
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	waiting, done := mk(), mk()
	if _, err := tasks.Done(done, task.DoneOptions{Outcome: task.OK}); err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`{
 "jobs": [
  {
   "task": %q,
   "trigger": "new-issues",
   "source": "github",
   "playbook": "triage-issue",
   "key": "new-issues/o/r#7",
   "state": "queued",
   "queued": "2026-11-26T11:59:00Z",
   "not_before": "2026-11-26T11:59:00Z",
   "deliveries": [
    "old-7"
   ]
  },
  {
   "task": %q,
   "trigger": "new-issues",
   "source": "github",
   "playbook": "triage-issue",
   "key": "new-issues/o/r#6",
   "state": "done",
   "queued": "2026-11-26T11:50:00Z",
   "not_before": "2026-11-26T11:50:00Z",
   "deliveries": [
    "old-6"
   ],
   "started": "2026-11-26T11:50:01Z",
   "finished": "2026-11-26T11:51:00Z",
   "outcome": "ok"
  }
 ]
}
`, waiting, done)
	ev, _ := json.MarshalIndent(Event{Untrusted: "untrusted", Trigger: "new-issues", Source: "github", Event: "issues", Delivery: "old-7",
		Repository: "o/r", Number: 7, Sender: "carol", Payload: json.RawMessage(`{"action":"opened"}`)}, "", " ")
	for p, b := range map[string][]byte{filepath.Join(f.in.Serve(), "queue.json"): []byte(old),
		filepath.Join(f.in.Serve(), "events", waiting+".json"): ev} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.runner.started = make(chan string, 1)
	s := f.service()
	if _, err := os.Stat(filepath.Join(f.in.Serve(), "queue.json.converted")); err != nil {
		t.Fatalf("queue.json not kept aside: %v", err)
	}
	if runs, _ := s.Runs(context.Background()); !strings.Contains(runs, done+" triage-issue (trigger new-issues): ok") {
		t.Fatalf("/runs lost the finished job: %q", runs)
	}
	stop := run(t, s)
	if got := <-f.runner.started; got != waiting {
		t.Fatalf("ran %s, want the converted %s", got, waiting)
	}
	stop()
	j := f.runner.jobs[0]
	if j.Task != waiting || f.runner.events[0].Number != 7 || f.runner.events[0].Sender != "carol" {
		t.Fatalf("the converted run: %+v %+v", j, f.runner.events[0])
	}
	ents, _ := filepath.Glob(filepath.Join(f.in.Tasks(), "task_*.md"))
	if len(ents) != 2 {
		t.Fatalf("%d task records, want the 2 there were: %v", len(ents), ents)
	}
	if rec, _ := tasks.Get(waiting); rec.Status != task.OK {
		t.Fatalf("the converted run's task: %+v", rec)
	}
	if _, err := os.Stat(filepath.Join(f.in.Serve(), "events", waiting+".json")); !os.IsNotExist(err) {
		t.Fatalf("the converted event file is left: %v", err)
	}
}

// Debounce folds the owner's deliveries and strangers' apart: a stranger's
// comment on the owner's issue does not take over the owner's waiting run
// (its event, its place in the owner's lane) but waits as a stranger's
// run, counted against its sender; a second from strangers folds into it.
func TestDebounceKeepsTheOwnersLaneTheOwners(t *testing.T) {
	f := newFixture(t, "10s")
	tr := f.cfg.Triggers["new-issues"]
	tr.OwnerLogin = "owner"
	f.cfg.Triggers["new-issues"] = tr
	s := f.service()
	var ids []string
	for i, who := range []string{"owner", "mallory", "eve"} {
		code, rep := send(s, github(issue(5, who), "issues", fmt.Sprintf("d-%d", i), secret))
		if code != http.StatusAccepted {
			t.Fatalf("delivery from %s: %d %+v", who, code, rep)
		}
		ids = append(ids, rep.Job)
	}
	if ids[0] == ids[1] || ids[1] != ids[2] {
		t.Fatalf("jobs %v: want the owner's apart, the strangers' folded together", ids)
	}
	own, _ := s.q.find(ids[0])
	if !own.Owner || len(own.Deliveries) != 1 || !strings.Contains(string(own.Event), `"owner"`) {
		t.Fatalf("the owner's job: %+v (event %s)", own, own.Event)
	}
	str, _ := s.q.find(ids[1])
	if str.Owner || len(str.Deliveries) != 2 {
		t.Fatalf("the strangers' job: %+v", str)
	}
}
