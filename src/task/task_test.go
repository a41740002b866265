package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// newLog is the task log of a new instance with the playbooks weekly and
// daily.
func newLog(t *testing.T) Log {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	in := instance.Instance{Root: t.TempDir()}
	os.MkdirAll(in.Playbooks(), 0o755)
	for _, pb := range []string{"weekly", "daily"} {
		os.WriteFile(in.Playbook(pb), []byte("a playbook"), 0o644)
	}
	return Log{Instance: in, Now: func() time.Time { now = now.Add(time.Minute); return now }}
}

func TestStartNeedsAnExistingPlaybook(t *testing.T) {
	l := newLog(t)
	if _, err := l.Start("x", "", "nope"); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `no playbook named "nope"`) {
		t.Errorf("missing playbook: %v", err)
	}
	if _, err := l.Start("x", "", "../x"); errs.Code(err) != errs.Usage {
		t.Errorf("bad name: %v", err)
	}
	if list, _ := l.List(); len(list) != 0 {
		t.Errorf("a refused start recorded %v", list)
	}
}

func TestLifecycle(t *testing.T) {
	l := newLog(t)
	a, err := l.Start("Summarise   report", "researcher", "")
	if err != nil || a.ID != "task_20261122_001" || a.Title != "Summarise report" {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := l.Start("Second", "", "weekly")
	if b.ID != "task_20261122_002" {
		t.Fatalf("id %s", b.ID)
	}
	var remembered []string
	rem := func(text string, tags []string, source string) (string, error) {
		remembered = append(remembered, fmt.Sprintf("%s|%s|%s", text, strings.Join(tags, ","), source))
		return fmt.Sprintf("mem_%d", len(remembered)), nil
	}
	retro := "# Retro\nWent fine.\n\n## Lessons learned\n- Check the CSV date format first.\n* Ask for the PDF, not a scan.\n\n## Other\n- not a lesson\n"
	done, err := l.Done(a.ID, DoneOptions{Outcome: OK, Retro: retro, Remember: rem})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != OK || done.Finished == nil || strings.Join(done.Remembered, ",") != "mem_1,mem_2" {
		t.Fatalf("%+v", done)
	}
	if len(remembered) != 2 || remembered[0] != "Check the CSV date format first.|task,researcher|task:task_20261122_001" {
		t.Fatalf("remembered %v", remembered)
	}
	got, err := l.Get(a.ID)
	if err != nil || !strings.Contains(got.Body, "## Retrospective") || !strings.Contains(got.Body, "## Retro\n") {
		t.Fatalf("body %q %v", got.Body, err)
	}
	if _, err := l.Done(a.ID, DoneOptions{Outcome: Failed}); errs.Code(err) != errs.Usage {
		t.Fatalf("finishing twice: %v", err)
	}
	list, probs := l.List()
	if len(list) != 2 || len(probs) != 0 || list[0].ID != b.ID {
		t.Fatalf("list %v %v", list, probs)
	}
	// A headless run's figures are kept in the record.
	if _, err := l.Done(b.ID, DoneOptions{Outcome: Failed, ClaudeResult: "error_max_turns", Turns: 7, CostUSD: 0.42}); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Get(b.ID); err != nil || got.ClaudeResult != "error_max_turns" || got.Turns != 7 || got.CostUSD != 0.42 {
		t.Fatalf("run figures %+v %v", got, err)
	}
}

func TestDoneValidation(t *testing.T) {
	l := newLog(t)
	a, _ := l.Start("x", "", "")
	if _, err := l.Done(a.ID, DoneOptions{Outcome: "meh"}); errs.Code(err) != errs.Usage {
		t.Fatal("bad outcome accepted")
	}
	rem := func(string, []string, string) (string, error) { return "", nil }
	if _, err := l.Done(a.ID, DoneOptions{Outcome: OK, Retro: "no lessons here", Remember: rem}); err == nil {
		t.Fatal("--remember without lessons accepted")
	}
	if got, _ := l.Get(a.ID); got.Status != Running {
		t.Fatal("failed done changed the task")
	}
	if _, err := l.Get("task_20990101_001"); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "no task") {
		t.Errorf("Get of a missing task: %v (want exit 1: the id is well formed)", err)
	}
	for _, id := range []string{"../x", "task_1", "task_20261122_001/../../x"} {
		if _, err := l.Get(id); errs.Code(err) != errs.Usage {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
}

func TestMalformedReported(t *testing.T) {
	l := newLog(t)
	l.Start("fine", "", "")
	os.MkdirAll(l.Instance.Tasks(), 0o755)
	p := l.path("task_20261122_009")
	content := "---\nid: task_20261122_009\nstatus: exploded\n---\n"
	os.WriteFile(p, []byte(content), 0o644)
	list, probs := l.List()
	if len(list) != 1 || len(probs) != 1 || probs[0].Path != p || probs[0].Line != 3 ||
		!strings.HasPrefix(probs[0].Reason, "status") || !strings.Contains(probs[0].String(), ":3: status") {
		t.Fatalf("%v %v", list, probs)
	}
	if _, err := l.Done("task_20261122_009", DoneOptions{Outcome: OK}); err == nil {
		t.Fatal("done on a malformed file")
	}
	if b, _ := os.ReadFile(p); string(b) != content {
		t.Fatal("malformed file rewritten")
	}
}

func TestLessons(t *testing.T) {
	got := Lessons("## Lessons\n- a\n  - b\n### Sub\n- c\n## Next\n- d\n")
	if strings.Join(got, "|") != "a|b|c" {
		t.Fatalf("%v", got)
	}
}

// A task directory that cannot be read is a problem, not an empty log.
func TestUnreadableDirReported(t *testing.T) {
	l := newLog(t)
	if list, probs := l.List(); len(list) != 0 || len(probs) != 0 {
		t.Fatalf("missing directory: %v %v", list, probs)
	}
	if err := os.MkdirAll(filepath.Dir(l.Instance.Tasks()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Instance.Tasks(), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, probs := l.List()
	if len(list) != 0 || len(probs) != 1 || probs[0].Path != l.Instance.Tasks() || !strings.Contains(probs[0].Reason, "not a directory") {
		t.Fatalf("list %v problems %v", list, probs)
	}
}

// logs/tasks is the agent's to write: a task file planted as a link to a
// host file, or as a FIFO, is refused (never followed, never blocking) and
// the link's target is left as it was.
func TestPlantedLinksAndFIFOsRefused(t *testing.T) {
	l := newLog(t)
	a, err := l.Start("Real", "", "")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "host.md")
	const id = "task_20261122_009"
	host := "---\nid: " + id + "\ntitle: Host\nstatus: running\nstarted: 2026-11-22T09:00:00Z\n---\n# Host\n"
	if err := os.WriteFile(outside, []byte(host), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(l.Instance.Tasks(), id+".md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(l.Instance.Tasks(), "task_20261122_010.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(id); !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("get through a link: %v", err)
	}
	if _, err := l.Done(id, DoneOptions{Outcome: OK, Retro: "done"}); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("done through a link: %v", err)
	}
	if _, err := l.Get("task_20261122_010"); !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), "is a FIFO") {
		t.Fatalf("get of a FIFO: %v", err)
	}
	tasks, probs := l.List()
	if len(tasks) != 1 || tasks[0].ID != a.ID || len(probs) != 2 {
		t.Fatalf("list: %v %v", tasks, probs)
	}
	if b, _ := os.ReadFile(outside); string(b) != host {
		t.Fatalf("host file changed: %q", b)
	}
	// logs/tasks itself a link elsewhere: start refuses, nothing written there.
	elsewhere := t.TempDir()
	if err := os.Rename(l.Instance.Tasks(), filepath.Join(elsewhere, "tasks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "tasks"), l.Instance.Tasks()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start("Another", "", ""); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("start through a linked logs/tasks: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(elsewhere, "tasks")); len(ents) != 4 { // the real task, the link, the FIFO, .lock
		t.Fatalf("the link's target changed: %v", ents)
	}
}

// A lesson that looks like a secret never reaches the Rememberer: it is
// skipped by number and kind, the other lessons are remembered and the task
// is recorded.
func TestDoneSkipsSecretLessons(t *testing.T) {
	l := newLog(t)
	tk, err := l.Start("Rotate", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	rem := func(text string, _ []string, _ string) (string, error) {
		got = append(got, text)
		return fmt.Sprintf("mem_%d", len(got)), nil
	}
	retro := "## Lessons\n\n- First.\n- Token ghp_a1B2a1B2a1B2a1B2a1B2a1B2a1B2a1B2a1B2\n- Third.\n"
	done, err := l.Done(tk.ID, DoneOptions{Outcome: OK, Retro: retro, Remember: rem})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "First.|Third." {
		t.Errorf("remembered %q, want the two lessons without the secret", got)
	}
	if len(done.Skipped) != 1 || done.Skipped[0] != (SkippedLesson{Lesson: 2, Kind: "github-token"}) {
		t.Errorf("skipped = %+v", done.Skipped)
	}
	back, err := l.Get(tk.ID)
	if err != nil || back.Status != OK || len(back.Remembered) != 2 {
		t.Fatalf("recorded task = %+v, %v", back, err)
	}
}

// A lesson the Rememberer fails on stops the rest, but the task is recorded
// with the memories made before it, and the error names the lesson by
// number, not by its text.
func TestDoneRecordsTaskWhenALessonFails(t *testing.T) {
	l := newLog(t)
	tk, err := l.Start("Export", "", "")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	rem := func(text string, _ []string, _ string) (string, error) {
		calls++
		if calls == 2 {
			return "", errors.New("memory is locked")
		}
		return "mem_1", nil
	}
	retro := "## Lessons\n\n- One.\n- Two private words.\n- Three.\n"
	done, err := l.Done(tk.ID, DoneOptions{Outcome: Failed, Retro: retro, Remember: rem})
	if err == nil || !strings.Contains(err.Error(), "lesson 2 of 3 was not remembered") || strings.Contains(err.Error(), "private words") {
		t.Fatalf("err = %v", err)
	}
	if errs.Code(err) != errs.Failure || calls != 2 || done == nil {
		t.Fatalf("code %d, calls %d, task %+v", errs.Code(err), calls, done)
	}
	back, gerr := l.Get(tk.ID)
	if gerr != nil || back.Status != Failed || len(back.Remembered) != 1 {
		t.Fatalf("recorded task = %+v, %v", back, gerr)
	}
}

func TestReview(t *testing.T) {
	l := newLog(t)
	a, _ := l.Start("playbook run: weekly", "hobbs", "weekly")
	b, _ := l.Start("by hand", "", "")
	if _, err := l.Done(a.ID, DoneOptions{Outcome: OK, Review: ReviewPending}); err != nil {
		t.Fatal(err)
	}
	l.Done(b.ID, DoneOptions{Outcome: OK})
	if _, err := l.SetReview(b.ID, ReviewApproved, ""); err == nil || !strings.Contains(err.Error(), "not waiting for a review") {
		t.Fatalf("review of a task not waiting for one: %v", err)
	}
	if _, err := l.SetReview(a.ID, "maybe", ""); err == nil {
		t.Fatal("a review that neither approves nor rejects")
	}
	got, err := l.SetReview(a.ID, ReviewRejected, "booked   twice")
	if err != nil || got.Review != ReviewRejected || !strings.Contains(got.Body, "rejected: booked twice") {
		t.Fatalf("%+v %v", got, err)
	}
	again, _ := l.Get(a.ID)
	if again.Review != ReviewRejected || strings.Count(again.Body, "## Review") != 1 {
		t.Fatalf("reread: %+v", again)
	}
}

// auditEntries reads the audit log the test's Log wrote.
func auditEntries(t *testing.T, path string) []audit.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, e)
	}
	return out
}

func TestLifecycleIsAudited(t *testing.T) {
	l := newLog(t)
	logPath := filepath.Join(l.Instance.Root, "audit.log")
	l.Audit = audit.New(safefile.Beneath(l.Instance.Root), logPath)
	a, err := l.Start("playbook run: weekly", "hobbs", "weekly")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Done(a.ID, DoneOptions{Outcome: Failed, Review: ReviewPending}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SetReview(a.ID, ReviewRejected, "wrong totals"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Done(a.ID, DoneOptions{Outcome: OK}); err == nil {
		t.Fatal("finished twice")
	}
	es := auditEntries(t, logPath)
	if len(es) != 4 {
		t.Fatalf("%d entries: %+v", len(es), es)
	}
	start, done, review, again := es[0], es[1], es[2], es[3]
	if start.Event != "task.start" || start.Subject != a.ID || start.Outcome != "ok" ||
		start.Detail["title"] != "playbook run: weekly" || start.Detail["playbook"] != "weekly" || start.Detail["agent"] != "hobbs" {
		t.Errorf("start %+v", start)
	}
	if done.Event != "task.done" || done.Subject != a.ID || done.Outcome != "ok" || done.Detail["outcome"] != Failed ||
		done.Detail["playbook"] != "weekly" || done.Detail["title"] != "playbook run: weekly" || done.Detail["review"] != ReviewPending {
		t.Errorf("done %+v", done)
	}
	if review.Event != "task.review" || review.Subject != a.ID || review.Detail["review"] != ReviewRejected {
		t.Errorf("review %+v", review)
	}
	if again.Event != "task.done" || again.Outcome != "error" || again.Detail["outcome"] != OK ||
		!strings.Contains(fmt.Sprint(again.Detail["error"]), "already finished") {
		t.Errorf("refused done %+v", again)
	}
}

func TestFind(t *testing.T) {
	l := newLog(t)
	run1, _ := l.Start(RunTitle("weekly"), "hobbs", "weekly")
	by, _ := l.Start("by hand", "", "weekly")
	run2, _ := l.Start(RunTitle("weekly"), "hobbs", "weekly")
	other, _ := l.Start(RunTitle("daily"), "hobbs", "daily")
	l.Done(run1.ID, DoneOptions{Outcome: OK})
	ids := func(ts []*Task) string {
		var s []string
		for _, t := range ts {
			if t.Body != "" {
				return "with a body"
			}
			s = append(s, t.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, strings.Join([]string{other.ID, run2.ID, by.ID, run1.ID}, ",")},
		{Filter{Playbook: "weekly", Runs: true}, run2.ID + "," + run1.ID},
		{Filter{Playbook: "weekly", Runs: true, Limit: 1}, run2.ID},
		{Filter{Playbook: "weekly"}, strings.Join([]string{run2.ID, by.ID, run1.ID}, ",")},
		{Filter{Status: OK}, run1.ID},
		{Filter{Status: Failed}, ""},
	} {
		got, probs := l.Find(c.f)
		if ids(got) != c.want || len(probs) != 0 {
			t.Errorf("Find(%+v) = %s (%v), want %s", c.f, ids(got), probs, c.want)
		}
	}
}

// Attack: the agent names a task file with a number past int64's. The next
// task gets the next id of the day, never a wrapped one; the file is
// named as a problem, not listed; its id is refused.
func TestOverflowingIDRefused(t *testing.T) {
	l := newLog(t)
	os.MkdirAll(l.Instance.Tasks(), 0o755)
	bad := filepath.Join(l.Instance.Tasks(), "task_20261122_9223372036854775807.md")
	os.WriteFile(bad, []byte("---\nid: task_20261122_9223372036854775807\ntitle: x\nstatus: running\nstarted: 2026-11-22T09:00:00Z\n---\n"), 0o644)
	os.WriteFile(filepath.Join(l.Instance.Tasks(), "task_20261122_999999.md"), []byte("---\nid: task_20261122_999999\ntitle: last\nstatus: ok\nstarted: 2026-11-22T09:00:00Z\n---\n"), 0o644)
	if _, err := l.Start("one more", "", ""); err == nil || !strings.Contains(err.Error(), "no task id left for 2026-11-22") {
		t.Fatalf("past the last id of the day: %v", err)
	}
	os.Remove(filepath.Join(l.Instance.Tasks(), "task_20261122_999999.md"))
	tk, err := l.Start("run", "", "weekly")
	if err != nil || tk.ID != "task_20261122_001" {
		t.Fatalf("start beside the planted file: %+v %v", tk, err)
	}
	if _, err := l.Done(tk.ID, DoneOptions{Outcome: OK}); err != nil {
		t.Fatalf("done: %v", err)
	}
	list, probs := l.List()
	if len(list) != 1 || list[0].ID != tk.ID || list[0].Status != OK {
		t.Errorf("list = %v", list)
	}
	if len(probs) != 1 || probs[0].Path != bad || !strings.Contains(probs[0].Reason, "out of range (at most 999999)") {
		t.Errorf("problems = %+v", probs)
	}
	if err := ValidID("task_20261122_9223372036854775807"); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("ValidID = %v", err)
	}
	if _, err := l.Get("task_20261122_9223372036854775807"); errs.Code(err) != errs.Usage {
		t.Errorf("Get = %v", err)
	}
}

// Attack: a task file the agent made huge (sparse) is refused unread and
// named; the others are listed, without their bodies.
func TestOversizeTaskFileRefused(t *testing.T) {
	l := newLog(t)
	tk, err := l.Start("ok one", "", "")
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(l.Instance.Tasks(), "task_20261122_002.md")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("---\nid: task_20261122_002\ntitle: big\nstatus: ok\nstarted: 2026-11-22T09:00:00Z\n---\n")
	f.Truncate(instance.MaxTaskFile + 1)
	f.Close()
	list, probs := l.List()
	if len(list) != 1 || list[0].ID != tk.ID || list[0].Body != "" {
		t.Errorf("list = %+v", list)
	}
	if len(probs) != 1 || probs[0].Path != big || !strings.HasPrefix(probs[0].Reason, "is larger than 1 MiB (1048577 bytes): not read") {
		t.Errorf("problems = %+v", probs)
	}
	if _, err := l.Get("task_20261122_002"); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("Get = %v", err)
	}
}

// A retrospective too long for a record is cut at its end, with a line
// saying so: the outcome is recorded, and the record can be read again.
func TestDoneKeepsTheRecordWithinItsCap(t *testing.T) {
	l := newLog(t)
	tk, _ := l.Start("long run", "", "")
	retro := "## Run\n\n- exit: 0\n\n" + strings.Repeat("é output line\n", instance.MaxTaskFile/8)
	got, err := l.Done(tk.ID, DoneOptions{Outcome: Failed, Retro: retro})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(got.Path)
	if fi.Size() > instance.MaxTaskFile {
		t.Fatalf("record of %d bytes", fi.Size())
	}
	back, err := l.Get(tk.ID)
	if err != nil || back.Status != Failed || !strings.Contains(back.Body, "- exit: 0") ||
		!strings.Contains(back.Body, "is not kept: a task record holds at most 1 MiB]") || !utf8.ValidString(back.Body) {
		t.Fatalf("read back: %v", err)
	}
}
