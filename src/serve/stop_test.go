package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/task"
)

// stopFixture is a service with one queued run whose runner holds every
// run until its context ends, and its log.
func stopFixture(t *testing.T) (*fixture, *Service, string, *lockedBuffer) {
	f := newFixture(t, "")
	f.runner.gate = make(chan struct{}) // never opened: a run lasts until stopped
	s := f.service()
	log := &lockedBuffer{}
	s.opt.Log = log
	_, rep := send(s, github(issue(1, "alice"), "issues", "d-1", secret))
	if rep.Job == "" {
		t.Fatalf("reply %+v", rep)
	}
	t.Cleanup(func() { stopLooked, startMarked = nil, nil })
	return f, s, rep.Job, log
}

// settle waits for the runs' ends and checks the job was finished once:
// no "queue:" complaint in the log.
func settle(t *testing.T, s *Service, log *lockedBuffer) {
	s.wg.Wait()
	if strings.Contains(log.String(), "queue:") {
		t.Errorf("log:\n%s", log)
	}
}

// /stop of a queued run that the scheduler starts while Stop is at it
// (the seam starts it right after Stop's look at the queue): the run is
// either dropped before it starts and never runs, or stopped while it
// runs; never recorded as dropped while it runs on, nor finished twice.
func TestStopWhileTheRunStarts(t *testing.T) {
	f, s, id, log := stopFixture(t)
	stopLooked = func() { stopLooked = nil; s.startReady() }
	reply, err := s.Stop(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	_, running := s.running[id]
	s.mu.Unlock()
	dropped := strings.HasPrefix(reply, "dropped")
	if dropped && running {
		t.Errorf("Stop answered %q, yet the run was started and runs on", reply)
		s.stopRuns()
	}
	settle(t, s, log)
	j := f.jobs()[0]
	switch {
	case j.State != Done || j.Outcome != task.Failed:
		t.Errorf("job %+v", j)
	case dropped && (f.runner.count() != 0 || j.Note != "stopped by the owner before it started"):
		t.Errorf("dropped, yet %d runs; job %+v", f.runner.count(), j)
	case !dropped && (reply != "stopping "+id || j.Note != "stopped"):
		t.Errorf("answered %q; job %+v", reply, j)
	}
}

// /stop of a run between its marking as running in the queue and its
// start (the seam calls Stop there): the run is stopped, not refused as
// neither queued nor running.
func TestStopAsTheRunIsMarked(t *testing.T) {
	f, s, id, log := stopFixture(t)
	var reply string
	var err error
	startMarked = func() {
		startMarked = nil
		reply, err = s.Stop(context.Background(), id)
	}
	s.startReady()
	if err != nil || reply != "stopping "+id {
		t.Errorf("Stop: %q, %v", reply, err)
		s.stopRuns()
	}
	settle(t, s, log)
	if j := f.jobs()[0]; j.State != Done || j.Note != "stopped" || f.runner.stoppedCtx != 1 {
		t.Errorf("job %+v, %d runs stopped", j, f.runner.stoppedCtx)
	}
}

// /stop of a running run (by its task id, too) cancels it; the run's end
// is recorded once, by the run.
func TestStopRunning(t *testing.T) {
	for _, byTask := range []bool{false, true} {
		t.Run(map[bool]string{false: "job", true: "task"}[byTask], func(t *testing.T) { stopRunning(t, byTask) })
	}
}

func stopRunning(t *testing.T, byTask bool) {
	{
		f, s, id, log := stopFixture(t)
		f.runner.started = make(chan string, 1)
		s.startReady()
		<-f.runner.started
		name := id
		if byTask {
			name = f.jobs()[0].Task
		}
		if reply, err := s.Stop(context.Background(), name); err != nil || reply != "stopping "+name {
			t.Errorf("Stop %s: %q, %v", name, reply, err)
		}
		settle(t, s, log)
		if j := f.jobs()[0]; j.State != Done || j.Note != "stopped" || f.runner.stoppedCtx != 1 {
			t.Errorf("job %+v, %d runs stopped", j, f.runner.stoppedCtx)
		}
		if _, err := s.Stop(context.Background(), name); err == nil {
			t.Error("a finished run was stopped again")
		}
	}
}

// A job is finished once: a second finish is refused and leaves the
// first end as it was.
func TestFinishOnce(t *testing.T) {
	f, s, id, _ := stopFixture(t)
	at := f.now()
	if err := s.q.finish(id, task.Failed, "first", at); err != nil {
		t.Fatal(err)
	}
	if err := s.q.finish(id, task.OK, "second", at.Add(time.Minute)); err == nil {
		t.Error("a finished job was finished again")
	}
	if j := f.jobs()[0]; j.Outcome != task.Failed || j.Note != "first" || !j.Finished.Equal(at) {
		t.Errorf("job %+v", j)
	}
}
