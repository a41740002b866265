package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/task"
)

// MissGrace is how long after its due time a run may start before the
// run counts as missed: schedulers start late (systemd's timer accuracy,
// a machine waking up and catching up), and a run records its task once
// it holds its lock.
const MissGrace = 15 * time.Minute

// calendar is the calendar j runs on, when this package reads it: its
// --at, or an --every on the clock.
func (j Job) calendar() (calendar, bool) {
	if j.Spec.At != "" {
		c, err := parseCalendar(j.Spec.At)
		return c, err == nil
	}
	c, _, ok := everyCalendar(j.Spec.Every)
	return c, ok
}

// missedDue returns the time j was due and did not run: the latest due
// time at least MissGrace before now, after the schedule was made, with
// no run of its playbook started since (lastRun: the newest run's start,
// zero for none). Zero when none was missed, or when it cannot be known
// (a schedule made before hobbs recorded when; a calendar only systemd
// reads).
func missedDue(j Job, lastRun, now time.Time) time.Time {
	if j.Added.IsZero() {
		return time.Time{}
	}
	at := now.Add(-MissGrace)
	var due time.Time
	if c, ok := j.calendar(); ok {
		due = c.prev(at.Local())
	} else if j.Spec.Every > 0 && j.Spec.At == "" {
		// systemd's OnUnitActiveSec: Every after the last run started.
		from := j.Added
		if lastRun.After(from) {
			from = lastRun
		}
		if due = from.Add(j.Spec.Every); due.After(at) {
			return time.Time{}
		}
	}
	if due.IsZero() || !due.After(j.Added) {
		return time.Time{}
	}
	if !lastRun.IsZero() && !lastRun.Before(due.Add(-time.Minute)) {
		return time.Time{}
	}
	return due
}

// lastRun is the newest headless run of e's playbook in e's instance
// started at or after since (nil: none, or no such instance).
func lastRun(e Entry, since time.Time) *task.Task {
	in, err := instance.At(e.Instance)
	if err != nil {
		return nil
	}
	return task.Log{Instance: in}.LastRun(e.Playbook, since)
}

// Status is a schedule in a listing, with the last run of its playbook.
type Status struct {
	Entry
	LastRun     string `json:"last_run"`     // when the last run started, RFC 3339; "" when none
	LastOutcome string `json:"last_outcome"` // running, ok or failed; "" when none
	// Missed is when the schedule was due and no run happened
	// (missedDue), RFC 3339; "" when none was missed.
	Missed string `json:"missed,omitempty"`
}

// WithLastRuns pairs each schedule with the newest headless run of its
// playbook in its instance's task log (none when the instance is gone),
// and flags a due run that did not happen.
func WithLastRuns(entries []Entry, now time.Time) []Status {
	out := make([]Status, 0, len(entries))
	for _, e := range entries {
		s := Status{Entry: e}
		if e.Task != "" {
			out = append(out, s) // no playbook runs; backup's own record has its runs
			continue
		}
		var started time.Time
		if last := lastRun(e, time.Time{}); last != nil {
			started = last.Started
			s.LastRun, s.LastOutcome = last.Started.Format(time.RFC3339), last.Status
		}
		if due := missedDue(e.job, started, now); !due.IsZero() {
			s.Missed = due.Format(time.RFC3339)
		}
		out = append(out, s)
	}
	return out
}

// Listing is what hobbs schedule list shows.
type Listing struct {
	Backend string
	Rows    []Status
	// CannotFire is why the scheduler would not fire these schedules
	// (CanFire); nil when it can or there are none.
	CannotFire error
}

// ListStatus lists the schedules of the scheduler o detects, each with
// its next and last run and a missed run flagged, and whether the
// scheduler can fire them.
func ListStatus(o Options, now time.Time) (Listing, error) {
	b, err := Detect(o)
	if err != nil {
		return Listing{}, err
	}
	entries, err := b.List()
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Backend: b.Name(), Rows: WithLastRuns(entries, now)}
	if len(entries) > 0 {
		l.CannotFire = CanFire(o, b.Name())
	}
	return l, nil
}

// MissedLine says that s missed its run, with its last run.
func (s Status) MissedLine() string {
	last := "it has not run since it was scheduled"
	if s.LastRun != "" {
		last = "its last run started " + s.LastRun + " (" + s.LastOutcome + ")"
	}
	return fmt.Sprintf("the schedule of %s (%s, %s) was due at %s and did not run; %s", s.Playbook, s.When(), s.Backend, s.Missed, last)
}

// MissedHint is what to do about a missed run.
const MissedHint = "a run the scheduler started but Hobbs refused is in the instance's audit log (event playbook.run, outcome refused); " +
	"the scheduler's own log has its output (systemd: journalctl --user -u hobbs-playbook-NAME.service; cron: the mail cron sends you); " +
	"hobbs doctor checks that the scheduler runs"

// missedState is what MissedRuns keeps between commands: the due time it
// last reported for each schedule (instance and playbook).
type missedState struct {
	Reported map[string]string `json:"reported"`
}

// MissedRuns returns the schedules of the scheduler o detects whose due
// run did not happen, each once: a missed run already reported is
// reported again only after a run of its playbook happened since. It is
// meant for every command the user runs on the host, so it is quiet when
// it cannot tell (no scheduler, an unreadable crontab: hobbs schedule list
// and hobbs doctor report those), and reads only the task records of the
// days since the due time.
func MissedRuns(o Options, now time.Time) []Status {
	if o.InContainer || o.fill() != nil {
		return nil
	}
	b, err := Detect(o)
	if err != nil {
		return nil
	}
	list := b.List
	if sd, ok := b.(audited).Backend.(*systemd); ok {
		list = sd.jobs // no systemctl call for the next runs
	}
	entries, err := list()
	if err != nil || len(entries) == 0 {
		return nil
	}
	st := readMissedState(o.StatePath)
	changed := false
	var out []Status
	for _, e := range entries {
		if e.Task != "" {
			continue // its own package reports it (backup.Notice)
		}
		key := e.Instance + "\t" + e.Playbook
		s := Status{Entry: e}
		var started time.Time
		since := e.job.Added
		if c, ok := e.job.calendar(); ok {
			// Only whether a run started after the latest due time matters.
			if d := c.prev(now.Add(-MissGrace).Local()); !d.IsZero() && d.After(since) {
				since = d.Add(-time.Minute)
			}
		}
		if last := lastRun(e, since); last != nil {
			started = last.Started
			s.LastRun, s.LastOutcome = last.Started.Format(time.RFC3339), last.Status
		}
		due := missedDue(e.job, started, now)
		if due.IsZero() {
			if _, ok := st.Reported[key]; ok {
				delete(st.Reported, key)
				changed = true
			}
			continue
		}
		if prev, ok := st.Reported[key]; ok {
			t, err := time.Parse(time.RFC3339, prev)
			if err == nil && !t.After(due) && lastRun(e, t) == nil {
				continue // the same outage, reported already
			}
		}
		s.Missed = due.Format(time.RFC3339)
		if last := lastRun(e, e.job.Added); last != nil { // the one before the due time
			s.LastRun, s.LastOutcome = last.Started.Format(time.RFC3339), last.Status
		}
		out = append(out, s)
		st.Reported[key] = s.Missed
		changed = true
	}
	if changed {
		writeMissedState(o.StatePath, st)
	}
	return out
}

func readMissedState(path string) missedState {
	st := missedState{Reported: map[string]string{}}
	b, err := safefile.Beneath(filepath.Dir(path)).ReadFile(filepath.Base(path), 1<<20)
	if err == nil {
		_ = json.Unmarshal(b, &st)
	}
	if st.Reported == nil {
		st.Reported = map[string]string{}
	}
	return st
}

func writeMissedState(path string, st missedState) {
	b, err := json.Marshal(st)
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	_ = safefile.Write(path, append(b, '\n'), 0o600)
}

// Doctor is doctor's schedules check of the user's schedules (every
// instance's): the scheduler can fire them, and none missed a run; each with
// its next and last run.
func Doctor(_ context.Context, env *doctor.Env) []doctor.Result {
	o := OptionsFromEnv(nil)
	if o.InContainer {
		return nil
	}
	b, err := Detect(o)
	if err != nil {
		return []doctor.Result{{Status: doctor.Warn, Message: err.Error()}}
	}
	entries, err := b.List()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || notInstalled(err) {
			return []doctor.Result{{Status: doctor.OK, Message: "no schedules (no " + b.Name() + " on this machine)"}}
		}
		return []doctor.Result{{Status: doctor.Warn, Message: err.Error(), Advice: errs.NewAdvice(Unlistable)}}
	}
	if len(entries) == 0 {
		return []doctor.Result{{Status: doctor.OK, Message: "no schedules (" + b.Name() + ")"}}
	}
	var out []doctor.Result
	if err := CanFire(o, b.Name()); err != nil {
		out = append(out, doctor.Result{Status: doctor.Fail, Message: fmt.Sprintf("%d schedule(s), but %v", len(entries), err), Advice: errs.AdviceOf(err)})
	}
	_ = o.fill()
	rows := WithLastRuns(entries, o.Now())
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Playbook < rows[j].Playbook })
	for _, s := range rows {
		next, last := orDash(s.Next), "none yet"
		if s.LastRun != "" {
			last = s.LastOutcome + " " + s.LastRun
		}
		if s.Missed != "" && s.Task == "" {
			out = append(out, doctor.Result{Status: doctor.Warn, Message: s.MissedLine(), Advice: errs.NewAdvice(MissedRun, "name", s.Playbook)})
			continue
		}
		out = append(out, doctor.Result{Status: doctor.OK, Message: fmt.Sprintf("%s %s (%s): next run %s, last run %s", s.Playbook, s.When(), s.Backend, next, last)})
	}
	return out
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
