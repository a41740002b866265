// Package task keeps the task log: one Markdown file with frontmatter per
// delegated or tracked task, in the instance's logs/tasks/.
//
//	---
//	id: task_20261122_001
//	title: Summarise the quarterly report
//	agent: researcher
//	playbook: quarterly-review
//	status: running            # running | ok | failed
//	started: 2026-11-22T09:14:03Z
//	finished: 2026-11-22T09:40:11Z
//	remembered: [mem_20261122_004]
//	---
//	# Summarise the quarterly report
//
//	## Retrospective
//	…
//
// Start allocates the next id of the day under the "tasks" lock and creates
// the file atomically; Done records the outcome once (a finished task is not
// finished again), appends the retrospective, and can turn the bullets of its
// "Lessons" section into memories through a Rememberer the caller provides.
// A lesson that looks like a secret (audit.SecretKind) is never handed to
// the Rememberer: memories are plaintext loaded into every session. It is
// skipped and reported by its number and the secret's kind, never its text,
// and the task and the other lessons are recorded all the same.
//
// Start, Done and SetReview record themselves in the audit log the Log is
// opened with (task.start, task.done, task.review; the subject is the task
// id), whoever calls them: a command, or a headless playbook run.
package task

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/frontmatter"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Statuses.
const (
	Running = "running"
	OK      = "ok"
	Failed  = "failed"
)

// Task is one task record.
type Task struct {
	ID         string     `yaml:"id" json:"id"`
	Title      string     `yaml:"title" json:"title"`
	Agent      string     `yaml:"agent,omitempty" json:"agent,omitempty"`
	Playbook   string     `yaml:"playbook,omitempty" json:"playbook,omitempty"`
	Status     string     `yaml:"status" json:"status"`
	Started    time.Time  `yaml:"started" json:"started"`
	Finished   *time.Time `yaml:"finished,omitempty" json:"finished,omitempty"`
	Remembered []string   `yaml:"remembered,omitempty" json:"remembered,omitempty"`
	// Review is a supervised playbook run's review: pending until the
	// user approves or rejects its result (hobbs task review).
	Review string `yaml:"review,omitempty" json:"review,omitempty"`
	// ClaudeResult, Turns and CostUSD are what Claude Code's result said of
	// a headless playbook run: its subtype (success, error_max_turns, …),
	// the turns it took and what it cost, in US dollars.
	ClaudeResult string  `yaml:"claude_result,omitempty" json:"claude_result,omitempty"`
	Turns        int     `yaml:"turns,omitempty" json:"turns,omitempty"`
	CostUSD      float64 `yaml:"cost_usd,omitempty" json:"cost_usd,omitempty"`
	// Skipped lists the lessons Done did not remember because they look
	// like a secret; reported by the command, not kept in the file.
	Skipped []SkippedLesson `yaml:"-" json:"skipped_lessons,omitempty"`
	Path    string          `yaml:"-" json:"path"`
	Body    string          `yaml:"-" json:"body,omitempty"`
}

// Log is the task log of an instance.
type Log struct {
	Instance instance.Instance
	Audit    *audit.Logger // nil: no audit entries
	Now      func() time.Time
}

// Open returns the task log of in, recording its changes in log.
func Open(in instance.Instance, log *audit.Logger) Log { return Log{Instance: in, Audit: log} }

func (l Log) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

// idRe is a task id: the day and its sequence number, 3 to 6 digits (at
// most instance.MaxSeq). A file name with a longer number is not a task:
// the agent names files in logs/tasks, and such a number must not wrap
// into the next id.
var idRe = regexp.MustCompile(`^task_(\d{8})_(\d{3,6})$`)

// outOfRangeRe is a name shaped like a task id whose number is longer
// than an id's: refused and named (List), never parsed.
var outOfRangeRe = regexp.MustCompile(`^task_\d{8}_\d{7,}$`)

// ValidID checks the shape of a task id (it also keeps ids from naming paths).
func ValidID(id string) error {
	if outOfRangeRe.MatchString(id) {
		return errs.Usagef("invalid task id %q: its number is out of range (at most %d)", id, instance.MaxSeq).
			Advise(BadID)
	}
	if !idRe.MatchString(id) {
		return errs.Usagef("invalid task id %q", id).Advise(BadID)
	}
	return nil
}

func (l Log) path(id string) string { return filepath.Join(l.Instance.Tasks(), id+".md") }

// fs is the instance's safe-open layer: logs/tasks is the agent's to write,
// so a link or special file there is refused, never followed.
func (l Log) fs() safefile.Root { return l.Instance.FS() }

func (l Log) lock() (func(), error) {
	if err := l.fs().MkdirAll(filepath.Dir(l.Instance.Lock("tasks")), 0o755); err != nil {
		return nil, err
	}
	return l.fs().Lock(l.Instance.Lock("tasks"), 30*time.Second)
}

// Start records a new running task and returns it; playbook, when given,
// must exist. The audit event task.start names its id, title, agent and
// playbook.
func (l Log) Start(title, agent, playbook string) (*Task, error) {
	title = strings.Join(strings.Fields(title), " ")
	t, err := l.start(title, agent, playbook)
	e := audit.Entry{Event: "task.start", Detail: map[string]any{"title": title, "agent": agent, "playbook": playbook}}
	if t != nil {
		e.Subject = t.ID
	}
	l.Audit.Record(e, err)
	return t, err
}

func (l Log) start(title, agent, pb string) (*Task, error) {
	if title == "" {
		return nil, errs.Usagef("a task needs a title")
	}
	if pb != "" {
		if !playbook.ValidName(pb) {
			return nil, errs.Usagef("invalid playbook name %q", pb).Advise(BadPlaybook)
		}
		if _, err := l.fs().Stat(l.Instance.Playbook(pb)); err != nil {
			return nil, errs.Failf("no playbook named %q", pb).Advise(BadPlaybook)
		}
	}
	if err := l.fs().MkdirAll(l.Instance.Tasks(), 0o755); err != nil {
		return nil, err
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := l.now()
	day := now.Format("20060102")
	next := 1
	ents, err := l.fs().ReadDir(l.Instance.Tasks())
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		// A name that is not an id (a number out of range included) is
		// not a task: it takes no part in the count, and List names it.
		if m := idRe.FindStringSubmatch(strings.TrimSuffix(e.Name(), ".md")); m != nil && m[1] == day {
			if n, err := instance.ParseSeq(m[2]); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	if next > instance.MaxSeq {
		return nil, errs.Failf("no task id left for %s: a day holds at most %d tasks", now.Format("2006-01-02"), instance.MaxSeq)
	}
	t := &Task{ID: fmt.Sprintf("task_%s_%03d", day, next), Title: title, Agent: agent, Playbook: pb,
		Status: Running, Started: now.Truncate(time.Second)}
	t.Body = fmt.Sprintf("\n# %s\n", title)
	data, err := frontmatter.Encode(t, []byte(t.Body))
	if err != nil {
		return nil, err
	}
	t.Path = l.path(t.ID)
	if err := l.fs().Create(t.Path, data, 0o644); err != nil {
		return nil, err
	}
	return t, nil
}

// Get reads one task.
func (l Log) Get(id string) (*Task, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	p := l.path(id)
	data, err := l.fs().ReadFile(p, instance.MaxTaskFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Failf("no task %s", id).Advise(NoTask)
	}
	if err != nil {
		return nil, err
	}
	return parse(p, data)
}

func parse(p string, data []byte) (*Task, error) {
	var t Task
	body, node, err := frontmatter.Decode(p, data, &t, true)
	if err != nil {
		return nil, err
	}
	switch {
	case !idRe.MatchString(t.ID):
		return nil, &frontmatter.ParseError{Path: p, Line: frontmatter.KeyLine(node, "id"), Reason: fmt.Sprintf("invalid id %q", t.ID)}
	case filepath.Base(p) != t.ID+".md":
		return nil, &frontmatter.ParseError{Path: p, Line: frontmatter.KeyLine(node, "id"), Reason: "id does not match the file name"}
	case t.Status != Running && t.Status != OK && t.Status != Failed:
		return nil, &frontmatter.ParseError{Path: p, Line: frontmatter.KeyLine(node, "status"), Reason: fmt.Sprintf("status %q is not running, ok or failed", t.Status)}
	}
	t.Path, t.Body = p, string(body)
	return &t, nil
}

// Problem is a task file that could not be read; it is reported and left alone.
type Problem = frontmatter.Problem

// List returns all tasks, newest first, without their bodies, and the
// files it could not parse (a file over instance.MaxTaskFile, or named like
// a task with a number out of range, among them). It holds one file's
// bytes at a time.
func (l Log) List() ([]*Task, []Problem) {
	var out []*Task
	var probs []Problem
	ents, err := l.fs().ReadDir(l.Instance.Tasks())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		probs = append(probs, frontmatter.ProblemOf(l.Instance.Tasks(), err))
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(l.Instance.Tasks(), e.Name())
		if outOfRangeRe.MatchString(strings.TrimSuffix(e.Name(), ".md")) {
			probs = append(probs, Problem{Path: p, Reason: fmt.Sprintf("not a task record: its id's number is out of range (at most %d); inspect it, then remove it", instance.MaxSeq)})
			continue
		}
		data, err := l.fs().ReadFile(p, instance.MaxTaskFile)
		if err == nil {
			var t *Task
			if t, err = parse(p, data); err == nil {
				t.Body = ""
				out = append(out, t)
				continue
			}
		}
		probs = append(probs, frontmatter.ProblemOf(p, err))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].ID > out[j].ID
	})
	return out, probs
}

// Filter selects tasks in a listing.
type Filter struct {
	Status   string // "": any
	Playbook string // "": any
	Runs     bool   // only the records of headless playbook runs (RunTitle)
	Limit    int    // at most this many, newest first (0: all)
}

// RunTitle is the title of the task a headless run of playbook records.
func RunTitle(playbook string) string { return runPrefix + playbook }

const runPrefix = "playbook run: "

// Find returns the tasks f selects, newest first, without their bodies,
// and the files it could not parse (List).
func (l Log) Find(f Filter) ([]*Task, []Problem) {
	tasks, probs := l.List()
	out := []*Task{}
	for _, t := range tasks {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		if (f.Status != "" && t.Status != f.Status) || (f.Playbook != "" && t.Playbook != f.Playbook) ||
			(f.Runs && !strings.HasPrefix(t.Title, runPrefix)) {
			continue
		}
		out = append(out, t)
	}
	return out, probs
}

// LastRun returns the newest record of a headless run of playbook
// (RunTitle) started at or after since, nil when there is none. It reads
// only the records of since's day and later, newest first, and stops at
// the first it finds: cheap enough for every command (the missed-run
// check of package schedule). Files it cannot read are skipped.
func (l Log) LastRun(playbook string, since time.Time) *Task {
	ents, err := l.fs().ReadDir(l.Instance.Tasks())
	if err != nil {
		return nil
	}
	type rec struct {
		day  string
		seq  int
		name string
	}
	from := since.UTC().Format("20060102")
	var recs []rec
	for _, e := range ents {
		m := idRe.FindStringSubmatch(strings.TrimSuffix(e.Name(), ".md"))
		if m == nil || !strings.HasSuffix(e.Name(), ".md") || m[1] < from {
			continue
		}
		if n, err := instance.ParseSeq(m[2]); err == nil {
			recs = append(recs, rec{m[1], n, e.Name()})
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].day != recs[j].day {
			return recs[i].day > recs[j].day
		}
		return recs[i].seq > recs[j].seq
	})
	for _, r := range recs {
		p := filepath.Join(l.Instance.Tasks(), r.name)
		data, err := l.fs().ReadFile(p, instance.MaxTaskFile)
		if err != nil {
			continue
		}
		t, err := parse(p, data)
		if err != nil || t.Playbook != playbook || t.Title != RunTitle(playbook) || t.Started.Before(since) {
			continue
		}
		t.Body = ""
		return t
	}
	return nil
}

// Rememberer stores one lesson as a memory and returns its id.
type Rememberer func(text string, tags []string, source string) (id string, err error)

// SkippedLesson is a lesson Done did not turn into a memory because it
// looks like a secret. It carries the lesson's number and the kind of
// secret, never the text.
type SkippedLesson struct {
	Lesson int    `json:"lesson"` // 1-based position among the Lessons bullets
	Kind   string `json:"kind"`   // audit.SecretKind's name for it
}

// Review states of a supervised run.
const (
	ReviewPending  = "pending"
	ReviewApproved = "approved"
	ReviewRejected = "rejected"
)

// DoneOptions configures Done.
type DoneOptions struct {
	Review   string     // ReviewPending for a run that waits for the user's review
	Outcome  string     // OK or Failed
	Retro    string     // retrospective Markdown, may be empty
	Remember Rememberer // when set, each bullet under a "Lessons" heading becomes a memory
	// ClaudeResult, Turns and CostUSD record a headless run's figures
	// (Task's fields of those names).
	ClaudeResult string
	Turns        int
	CostUSD      float64
}

// Done finishes a running task. The audit event task.done names its title,
// playbook and outcome, the memories its lessons made and the lessons
// skipped as secrets; an error (the task recorded, a lesson not stored,
// included) makes its outcome "error".
func (l Log) Done(id string, o DoneOptions) (*Task, error) {
	t, err := l.done(id, o)
	e := audit.Entry{Event: "task.done", Subject: id, Detail: map[string]any{"outcome": o.Outcome}}
	if t != nil {
		e.Detail = map[string]any{"title": t.Title, "agent": t.Agent, "playbook": t.Playbook, "outcome": t.Status,
			"remembered": t.Remembered}
		if len(t.Skipped) > 0 {
			e.Detail["skipped_lessons"] = t.Skipped
		}
		if t.Review != "" {
			e.Detail["review"] = t.Review
		}
	}
	l.Audit.Record(e, err)
	return t, err
}

func (l Log) done(id string, o DoneOptions) (*Task, error) {
	if o.Outcome != OK && o.Outcome != Failed {
		return nil, errs.Usagef("outcome must be ok or failed, not %q", o.Outcome)
	}
	var lessons []string
	if o.Remember != nil {
		lessons = Lessons(o.Retro)
		if len(lessons) == 0 {
			return nil, errs.Usagef("--remember: the retrospective has no bullets under a \"Lessons\" heading").
				Advise(NoLessons)
		}
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := l.Get(id)
	if err != nil {
		return nil, err
	}
	if t.Status != Running {
		return nil, errs.Usagef("task %s already finished (%s at %s)", id, t.Status, t.Finished.Format(time.RFC3339))
	}
	now := l.now().Truncate(time.Second)
	t.Status, t.Finished, t.Review = o.Outcome, &now, o.Review
	t.ClaudeResult, t.Turns, t.CostUSD = o.ClaudeResult, o.Turns, o.CostUSD
	head := t.Body
	if r := strings.TrimSpace(o.Retro); r != "" {
		head = strings.TrimRight(t.Body, "\n") + "\n\n## Retrospective\n\n"
		t.Body = head + demoteTopHeading(r) + "\n"
	}
	source := "task:" + t.ID
	tags := []string{"task"}
	if t.Agent != "" {
		tags = append(tags, t.Agent)
	}
	// A lesson that fails to be stored stops the others, but the task is
	// recorded first with the memories made so far: finishing it again is
	// refused, so losing the record would lose the outcome.
	var rememberErr error
	for i, lesson := range lessons {
		if kind := audit.SecretKind(lesson); kind != "" {
			t.Skipped = append(t.Skipped, SkippedLesson{Lesson: i + 1, Kind: kind})
			continue
		}
		mid, err := o.Remember(lesson, tags, source)
		if err != nil {
			rememberErr = &errs.Error{Code: errs.Failure, Err: err,
				Msg:    fmt.Sprintf("task %s recorded, but lesson %d of %d was not remembered", t.ID, i+1, len(lessons)),
				Advice: errs.NewAdvice(LessonsLeft, "source", source)}
			break
		}
		t.Remembered = append(t.Remembered, mid)
	}
	data, err := fitRecord(t, head)
	if err != nil {
		return nil, err
	}
	if err := l.fs().Write(t.Path, data, 0o644); err != nil {
		return nil, err
	}
	return t, rememberErr
}

// fitRecord encodes t, its retrospective (what follows head in its body)
// cut at the end when the record would be over instance.MaxTaskFile, with
// a line saying so: the outcome is recorded whatever the run printed.
func fitRecord(t *Task, head string) ([]byte, error) {
	data, err := frontmatter.Encode(t, []byte(t.Body))
	if err != nil || len(data) <= instance.MaxTaskFile {
		return data, err
	}
	retro := strings.TrimPrefix(t.Body, head)
	note := fmt.Sprintf("\n\n[… the rest (%d bytes) is not kept: a task record holds at most %s]\n", len(retro), safefile.FormatSize(instance.MaxTaskFile))
	keep := len(retro) - (len(data) - instance.MaxTaskFile) - len(note) - 64
	if keep < 0 {
		return nil, errs.Failf("task %s: the record would be larger than %s", t.ID, safefile.FormatSize(instance.MaxTaskFile))
	}
	for keep > 0 && !utf8.RuneStart(retro[keep]) {
		keep--
	}
	t.Body = head + retro[:keep] + note
	return frontmatter.Encode(t, []byte(t.Body))
}

// SetReview records the user's review of a finished task waiting for one:
// approved or rejected, with a dated line (and note) under "## Review",
// and the audit event task.review.
func (l Log) SetReview(id, verdict, note string) (*Task, error) {
	t, err := l.setReview(id, verdict, note)
	l.Audit.Record(audit.Entry{Event: "task.review", Subject: id, Detail: map[string]any{"review": verdict}}, err)
	return t, err
}

func (l Log) setReview(id, verdict, note string) (*Task, error) {
	if verdict != ReviewApproved && verdict != ReviewRejected {
		return nil, errs.Usagef("a review approves or rejects, not %q", verdict)
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := l.Get(id)
	if err != nil {
		return nil, err
	}
	if t.Review == "" {
		return nil, errs.Usagef("task %s is not waiting for a review (only runs of supervised playbooks are)", id)
	}
	t.Review = verdict
	line := fmt.Sprintf("- %s %s", l.now().UTC().Format(time.RFC3339), verdict)
	if n := strings.Join(strings.Fields(note), " "); n != "" {
		line += ": " + n
	}
	if !strings.Contains(t.Body, "\n## Review\n") {
		t.Body = strings.TrimRight(t.Body, "\n") + "\n\n## Review\n\n"
	}
	t.Body = strings.TrimRight(t.Body, "\n") + "\n" + line + "\n"
	data, err := frontmatter.Encode(t, []byte(t.Body))
	if err != nil {
		return nil, err
	}
	if err := l.fs().Write(t.Path, data, 0o644); err != nil {
		return nil, err
	}
	return t, nil
}

// demoteTopHeading keeps a retrospective's own "# Title" from competing with
// the task's title.
func demoteTopHeading(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# ") {
			lines[i] = "#" + l
		}
	}
	return strings.Join(lines, "\n")
}

var headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// Lessons returns the bullet items under the first heading whose text starts
// with "Lessons" (case-insensitive), up to the next heading of the same or a
// higher level.
func Lessons(md string) []string {
	var out []string
	level := 0
	for _, l := range strings.Split(md, "\n") {
		if m := headingRe.FindStringSubmatch(l); m != nil {
			if level > 0 && len(m[1]) <= level {
				break
			}
			if level == 0 && strings.HasPrefix(strings.ToLower(m[2]), "lessons") {
				level = len(m[1])
			}
			continue
		}
		if level == 0 {
			continue
		}
		t := strings.TrimSpace(l)
		for _, p := range []string{"- ", "* ", "+ "} {
			if item, ok := strings.CutPrefix(t, p); ok && strings.TrimSpace(item) != "" {
				out = append(out, strings.TrimSpace(item))
			}
		}
	}
	return out
}
