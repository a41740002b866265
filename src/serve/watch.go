package serve

import (
	"context"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/task"
)

// Never silent: besides the runs it starts, the service delivers the end
// of every other headless run of the instance — a schedule's, or one
// started by hand — and every schedule that missed its run, as it finds
// them in the task log and the scheduler (each WatchInterval, and at
// start). watch.json keeps the newest end delivered, so a restart
// delivers what ended while the service was down and nothing twice; the
// first start delivers nothing from before it. Missed runs are reported
// once per outage (schedule.MissedRuns, with a state of the service's own,
// so the host's commands report them too).

// WatchInterval is how often the service looks for ended runs and missed
// schedules.
const WatchInterval = time.Minute

// watchFile is the service's record of the newest run end it delivered.
type watchFile struct {
	Since time.Time `json:"since"`
}

// watch delivers ended runs and missed schedules until ctx ends.
func (s *Service) watch(ctx context.Context) {
	for {
		s.watchOnce()
		select {
		case <-ctx.Done():
			return
		case <-time.After(WatchInterval):
		}
	}
}

// watchOnce delivers what ended and what missed since the last look.
func (s *Service) watchOnce() {
	now := s.opt.Now().UTC()
	var w watchFile
	if err := s.st.read("watch.json", &w); err != nil {
		s.logf("watch: %v", err)
		return
	}
	if w.Since.IsZero() {
		w.Since = now // the first start: only what ends from now on
	}
	tasks, _ := s.opt.Tasks.Find(task.Filter{Runs: true, Limit: 200})
	since := w.Since
	for i := len(tasks) - 1; i >= 0; i-- { // oldest first
		t := tasks[i]
		if t.Finished == nil || !t.Finished.After(since) {
			continue
		}
		if t.Finished.After(w.Since) {
			w.Since = *t.Finished
		}
		if s.ranHere(t.ID) {
			continue // delivered by runJob
		}
		if full, err := s.opt.Tasks.Get(t.ID); err == nil {
			t = full
		}
		s.deliver(taskNotice(t))
	}
	if err := s.st.write("watch.json", w); err != nil {
		s.logf("watch: %v", err)
	}
	o := schedule.OptionsFromEnv(nil)
	o.StatePath = s.st.path("missed.json")
	for _, m := range schedule.MissedRuns(o, now) {
		if m.Instance != s.opt.Instance.Root {
			continue
		}
		s.deliver(channel.Notice{ID: "missed:" + m.Playbook + ":" + m.Missed, Text: "Missed: " + m.MissedLine() + ".\n\n" + schedule.MissedHint})
	}
}

// ranHere reports whether task id is a run this service started.
func (s *Service) ranHere(id string) bool {
	jobs, err := s.st.jobs()
	if err != nil {
		return false
	}
	for _, j := range jobs {
		if j.Task == id {
			return true
		}
	}
	return false
}

// taskNotice is the notice of the end of a run the service did not start.
func taskNotice(t *task.Task) channel.Notice {
	return runNotice(t.ID, t.Playbook+": "+t.Status, t.Turns, t.CostUSD, t.Body, t.Review == task.ReviewPending)
}
