package schedule

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/playbook"
)

// ParseSpec reads the two ways of saying when: every, a Go duration ("30m",
// "24h"), or at, a calendar spec; exactly one, checked (Spec.Check).
func ParseSpec(every, at string) (Spec, error) {
	s := Spec{At: at}
	if every != "" {
		d, err := time.ParseDuration(every)
		if err != nil {
			return s, errs.Usagef("--every %q is not a duration", every).Advise(BadDuration)
		}
		s.Every = d
	}
	return s, s.Check()
}

// AddPlaybook schedules headless runs of playbook name of st's instance
// (st.In) with the scheduler o detects. Only a playbook that may run on a
// schedule (playbook.CanSchedule) is scheduled, and scheduling it approves
// what it runs, as hobbs playbook approve does: the playbook's text as read
// here and the skills and sub-agents it names (the approval recorded in
// st.Audit). The job runs Binary with the
// instance's absolute path.
func AddPlaybook(o Options, st *playbook.Store, name string, spec Spec) (Result, error) {
	if name == BackupJob {
		return Result{}, errs.Usagef("%s is the name of the backup schedule; rename the playbook", name)
	}
	d, _, err := st.Get(name)
	if err != nil {
		return Result{}, err
	}
	if err := playbook.CanSchedule(name, d.Meta); err != nil {
		return Result{}, err
	}
	b, err := Detect(o)
	if err != nil {
		return Result{}, err
	}
	bin, err := Binary()
	if err != nil {
		return Result{}, err
	}
	root, err := filepath.Abs(st.In.Root)
	if err != nil {
		return Result{}, errs.Wrap(errs.Failure, err, "instance path")
	}
	if err := CanFire(o, b.Name()); err != nil {
		return Result{}, err
	}
	if _, err := playbook.Approve(st.In, name, d, time.Now(), st.Audit); err != nil {
		return Result{}, err
	}
	return b.Add(Job{Playbook: name, Instance: root, Binary: bin, Spec: spec, Added: time.Now().UTC().Truncate(time.Second)})
}

// RemovePlaybook removes the schedule of playbook name from the scheduler
// o detects and returns the scheduler's name; a playbook that is not
// scheduled there is an error.
func RemovePlaybook(o Options, name string) (string, error) {
	if !playbook.ValidName(name) {
		return "", errs.Usagef("invalid playbook name %q", name)
	}
	b, err := Detect(o)
	if err != nil {
		return "", err
	}
	removed, err := b.Remove(name)
	if err == nil && !removed {
		err = errs.Failf("%s is not scheduled (%s)", name, b.Name()).Advise(NotScheduled)
	}
	return b.Name(), err
}

// Binary is the absolute path schedulers run: the name this hobbs was
// started as when it resolves to this executable (keeping a stable link
// such as /usr/local/bin/hobbs), else the executable itself.
func Binary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", errs.Wrap(errs.Failure, err, "find the hobbs binary")
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			fa, errA := os.Stat(abs)
			fe, errE := os.Stat(exe)
			if errA == nil && errE == nil && os.SameFile(fa, fe) {
				return abs, nil
			}
		}
	}
	return exe, nil
}

// Where names where backend keeps the schedule of playbook: "cron", or
// "systemd timer hobbs-playbook-NAME.timer".
func Where(backend, playbook string) string {
	if backend == "systemd" {
		return "systemd timer " + UnitName(playbook) + ".timer"
	}
	return backend
}

// When is how a listing shows the schedule: "every 30m" or "at SPEC".
func (e Entry) When() string {
	if e.At != "" {
		return "at " + e.At
	}
	return "every " + e.Every
}

// StatusColumns is the header of hobbs schedule list, the columns of Row.
const StatusColumns = "PLAYBOOK\tWHEN\tNEXT RUN\tLAST RUN\tBACKEND"

// Row is the schedule's line of hobbs schedule list, tab-separated:
// playbook, when it runs, the next run, the last run's outcome and start
// (and "MISSED at TIME" after it when a due run did not happen), the
// scheduler; "-" for what is not known.
func (s Status) Row() string {
	last := "-"
	if s.LastRun != "" {
		last = s.LastOutcome + " " + s.LastRun
	}
	if s.Missed != "" {
		last += " MISSED at " + s.Missed
	}
	return strings.Join([]string{s.Playbook, s.When(), orDash(s.Next), last, s.Backend}, "\t")
}

// AddBackup schedules hobbs backup of the instance at root (absolute)
// with the scheduler o detects, under the key BackupJob.
func AddBackup(o Options, root string, spec Spec) (Result, error) {
	b, err := Detect(o)
	if err != nil {
		return Result{}, err
	}
	bin, err := Binary()
	if err != nil {
		return Result{}, err
	}
	if err := CanFire(o, b.Name()); err != nil {
		return Result{}, err
	}
	return b.Add(Job{Playbook: BackupJob, Task: TaskBackup, Instance: root, Binary: bin, Spec: spec, Added: time.Now().UTC().Truncate(time.Second)})
}

// RemoveBackup removes the backup schedule; false when there was none.
func RemoveBackup(o Options) (string, bool, error) {
	b, err := Detect(o)
	if err != nil {
		return "", false, err
	}
	removed, err := b.Remove(BackupJob)
	return b.Name(), removed, err
}
