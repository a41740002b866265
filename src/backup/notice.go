package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/schedule"
)

// Never silent: a backup that failed, or a scheduled one that did not
// happen, is told to the owner once — by the next hobbs command on the
// host (Tell with the machine's record), by hobbs serve's delivery (Tell
// with a state of its own) — and hobbs doctor shows it until a backup
// succeeds.

// MissGrace is how long after its due time a scheduled backup may
// succeed before it counts as missed.
const MissGrace = 15 * time.Minute

// Alert is what the owner must hear about the instance's backups.
type Alert struct {
	ID     string      // stable for one failure or one outage
	Line   string      // what happened, one line
	Advice errs.Advice // what to do
}

// Pending returns the alert of st at now: the last backup failed, or a
// scheduled backup is overdue (no good backup for Every + MissGrace).
func Pending(st State, now time.Time) (Alert, bool) {
	if st.Repo == "" {
		return Alert{}, false
	}
	if st.Last != nil && st.Last.Error != "" && (st.LastOK == nil || st.Last.Time.After(st.LastOK.Time)) {
		return Alert{ID: "failed:" + st.Last.Time.Format(time.RFC3339),
			Line:   fmt.Sprintf("the backup of %s to %s failed: %s", st.Last.Time.Local().Format("2006-01-02 15:04"), st.Repo, st.Last.Error),
			Advice: errs.NewAdvice(Failed, "repo", st.Repo)}, true
	}
	if st.Every > 0 && st.LastOK != nil {
		due := st.LastOK.Time.Add(time.Duration(st.Every))
		if now.After(due.Add(MissGrace)) {
			return Alert{ID: "overdue:" + due.Format(time.RFC3339),
				Line: fmt.Sprintf("no backup since %s (scheduled every %s; due %s)", st.LastOK.Time.Local().Format("2006-01-02 15:04"),
					schedule.FormatDuration(time.Duration(st.Every)), due.Local().Format("2006-01-02 15:04")),
				Advice: errs.NewAdvice(Overdue, "repo", st.Repo)}, true
		}
	}
	return Alert{}, false
}

// Tell returns in's pending alert the first time it is asked for it:
// what was told is kept in toldPath ("": the machine's backup record).
// Quiet (false) when there is nothing new or it cannot tell.
func Tell(in instance.Instance, now time.Time, toldPath string) (Alert, bool) {
	st, ok, err := LoadState(in)
	if err != nil || !ok {
		return Alert{}, false
	}
	a, ok := Pending(st, now)
	if !ok {
		return Alert{}, false
	}
	if toldPath == "" {
		if st.Told == a.ID {
			return Alert{}, false
		}
		if updateState(in, func(s *State) { s.Told = a.ID }) != nil {
			return Alert{}, false
		}
		return a, true
	}
	var told struct {
		Told string `json:"told"`
	}
	root := safefile.Beneath(filepath.Dir(toldPath))
	if b, err := root.ReadFile(filepath.Base(toldPath), 64<<10); err == nil {
		_ = json.Unmarshal(b, &told)
	}
	if told.Told == a.ID {
		return Alert{}, false
	}
	told.Told = a.ID
	b, _ := json.Marshal(told)
	if os.MkdirAll(filepath.Dir(toldPath), 0o700) != nil || root.Write(filepath.Base(toldPath), b, 0o600) != nil {
		return Alert{}, false
	}
	return a, true
}

// SetEvery records the schedule's interval (0: none) in in's record.
func SetEvery(in instance.Instance, every time.Duration) error {
	return updateState(in, func(s *State) { s.Every = Duration(every) })
}

// Doctor is doctor's backup check: the age of the last good backup, a
// failure since, and one older than twice the schedule's interval.
func Doctor(_ context.Context, env *doctor.Env) []doctor.Result {
	if instance.InContainer() {
		return nil
	}
	st, ok, err := LoadState(env.Instance)
	if err != nil {
		return []doctor.Result{{Status: doctor.Warn, Message: err.Error()}}
	}
	if !ok || st.Repo == "" {
		return []doctor.Result{{Status: doctor.OK, Message: "no backups set up (hobbs backup init REPO)"}}
	}
	now := time.Now()
	if st.LastOK == nil {
		r := doctor.Result{Status: doctor.Warn, Message: "no backup yet to " + st.Repo, Advice: errs.NewAdvice(NeverBacked, "repo", st.Repo)}
		if st.Last != nil {
			r.Message += "; the last attempt failed: " + st.Last.Error
		}
		return []doctor.Result{r}
	}
	age := now.Sub(st.LastOK.Time)
	msg := fmt.Sprintf("last good backup %s ago (%s, snapshot %s) to %s", ageOf(age), st.LastOK.Time.Local().Format("2006-01-02 15:04"), st.LastOK.Snapshot, st.Repo)
	if st.Every > 0 {
		msg += "; scheduled every " + schedule.FormatDuration(time.Duration(st.Every))
	}
	var out []doctor.Result
	switch {
	case st.Every > 0 && age > 2*time.Duration(st.Every):
		out = append(out, doctor.Result{Status: doctor.Warn, Message: msg + ": older than twice the interval", Advice: errs.NewAdvice(Overdue, "repo", st.Repo)})
	default:
		out = append(out, doctor.Result{Status: doctor.OK, Message: msg})
	}
	if st.Last != nil && st.Last.Error != "" && st.Last.Time.After(st.LastOK.Time) {
		out = append(out, doctor.Result{Status: doctor.Warn, Message: "the last backup failed: " + st.Last.Error, Advice: errs.NewAdvice(Failed, "repo", st.Repo)})
	}
	return out
}

// RecordFailure records a backup that failed before restic ran (no
// password, no repository) as Backup records one that failed in it.
func RecordFailure(in instance.Instance, at time.Time, err error) error {
	if _, ok, lerr := LoadState(in); lerr != nil || !ok {
		return lerr
	}
	return updateState(in, func(s *State) {
		s.Last = &Run{Time: at.UTC(), Error: strings.SplitN(err.Error(), "\n", 2)[0]}
	})
}
