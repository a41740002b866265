package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// hobbs serve's state is host-only (instance serve/, which no session
// mounts): the deliveries seen in the replay window (deliveries.json), the
// run queue (queue.json) and the events of the queued runs (events/). Each
// file is written atomically under its own lock (.locks/), so a crash or a
// SIGTERM leaves the old file or the new one; a file that does not parse is
// reported and never rewritten.

// ReplayWindow is how long a delivery's id and body digest are remembered.
const ReplayWindow = 24 * time.Hour

// maxSeen bounds the replay keys kept (two per delivery): signed
// deliveries only reach the record, so only the secret's holders can fill
// it.
const maxSeen = 100000

// store is the state files of one instance.
type store struct {
	in instance.Instance
}

func (s store) fs() safefile.Root          { return s.in.FS() }
func (s store) path(name string) string    { return filepath.Join(s.in.Serve(), name) }
func (s store) eventPath(id string) string { return filepath.Join(s.in.Serve(), "events", id+".json") }

// lock takes the lock of one state file.
func (s store) lock(name string) (func(), error) {
	if err := s.fs().MkdirAll(s.in.Locks(), 0o700); err != nil {
		return nil, err
	}
	return s.fs().Lock(s.in.Lock("serve-"+name), 30*time.Second)
}

// read decodes the JSON file name into v; a missing file leaves v as it is.
func (s store) read(name string, v any) error {
	b, err := s.fs().ReadFile(s.path(name), instance.MaxServeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Failure, err, "read %s", s.in.Rel(s.path(name)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errs.Failf("%s: %v; hobbs serve leaves it as it is: move it aside to start afresh", s.in.Rel(s.path(name)), err)
	}
	return nil
}

// write encodes v into the file name atomically.
func (s store) write(name string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := s.fs().MkdirAll(s.in.Serve(), 0o700); err != nil {
		return err
	}
	if err := s.fs().Write(s.path(name), append(b, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "write %s", s.in.Rel(s.path(name)))
	}
	return nil
}

// Seen records the replay keys of a delivery to trigger (ReplayKeys: its
// id and its body's digest) at now and reports whether any of them was
// seen already within ReplayWindow: a delivery is a replay when its id or
// its body was. Keys older than the window are dropped.
func (s store) Seen(trigger string, keys []string, now time.Time) (bool, error) {
	unlock, err := s.lock("deliveries")
	if err != nil {
		return false, err
	}
	defer unlock()
	seen := map[string]time.Time{}
	if err := s.read("deliveries.json", &seen); err != nil {
		return false, err
	}
	for _, k := range keys {
		if t, ok := seen[trigger+" "+k]; ok && now.Sub(t) < ReplayWindow {
			return true, nil
		}
	}
	for k, t := range seen {
		if now.Sub(t) >= ReplayWindow {
			delete(seen, k)
		}
	}
	if len(seen)+len(keys) > maxSeen {
		return false, errs.Failf("%d delivery records in the last %v: refusing more until older ones expire", len(seen), ReplayWindow)
	}
	for _, k := range keys {
		seen[trigger+" "+k] = now.UTC()
	}
	return false, s.write("deliveries.json", seen)
}

// Forget removes a delivery's replay keys from trigger's record: a
// delivery refused after its signature held (its playbook may not run, its
// body does not parse, it was not queued) may be delivered again once that
// is fixed.
func (s store) Forget(trigger string, keys []string) error {
	unlock, err := s.lock("deliveries")
	if err != nil {
		return err
	}
	defer unlock()
	seen := map[string]time.Time{}
	if err := s.read("deliveries.json", &seen); err != nil {
		return err
	}
	for _, k := range keys {
		delete(seen, trigger+" "+k)
	}
	return s.write("deliveries.json", seen)
}

// Job states.
const (
	Queued  = "queued"
	Running = "running"
	Done    = "done"
)

// Job is one triggered run in the queue. Its id is the run's task id.
type Job struct {
	Task     string    `json:"task"`
	Trigger  string    `json:"trigger"`
	Source   string    `json:"source"`
	Playbook string    `json:"playbook"`
	Key      string    `json:"key"` // debounce key (Event.Key)
	State    string    `json:"state"`
	Queued   time.Time `json:"queued"`
	// NotBefore is when the run may start: the end of its debounce window.
	NotBefore time.Time `json:"not_before"`
	// Deliveries are the delivery ids this run stands for (one, or those
	// debounce folded into it); the event file holds the latest.
	Deliveries []string   `json:"deliveries"`
	Started    *time.Time `json:"started,omitempty"`
	Finished   *time.Time `json:"finished,omitempty"`
	Outcome    string     `json:"outcome,omitempty"`
	Note       string     `json:"note,omitempty"`
}

// queueFile is queue.json: the jobs not done, and the latest done ones.
type queueFile struct {
	Jobs []*Job `json:"jobs"`
}

// keepDone is how many finished jobs queue.json keeps (hobbs serve's /runs).
const keepDone = 20

// update runs fn on the queue under its lock and writes what it leaves.
func (s store) update(fn func(q *queueFile) error) error {
	unlock, err := s.lock("queue")
	if err != nil {
		return err
	}
	defer unlock()
	var q queueFile
	if err := s.read("queue.json", &q); err != nil {
		return err
	}
	if err := fn(&q); err != nil {
		return err
	}
	var live, done []*Job
	for _, j := range q.Jobs {
		if j.State == Done {
			done = append(done, j)
		} else {
			live = append(live, j)
		}
	}
	sort.SliceStable(done, func(i, k int) bool { return done[i].Finished.Before(*done[k].Finished) })
	if len(done) > keepDone {
		done = done[len(done)-keepDone:]
	}
	q.Jobs = append(live, done...)
	return s.write("queue.json", q)
}

// jobs reads the queue.
func (s store) jobs() ([]*Job, error) {
	unlock, err := s.lock("queue")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var q queueFile
	err = s.read("queue.json", &q)
	return q.Jobs, err
}

// writeEvent writes a job's event file.
func (s store) writeEvent(task string, e Event) error {
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return err
	}
	if err := s.fs().MkdirAll(filepath.Dir(s.eventPath(task)), 0o700); err != nil {
		return err
	}
	return s.fs().Write(s.eventPath(task), append(b, '\n'), 0o600)
}

// readEvent reads a job's event file.
func (s store) readEvent(task string) ([]byte, error) {
	b, err := s.fs().ReadFile(s.eventPath(task), instance.MaxServeFile)
	if err != nil {
		return nil, fmt.Errorf("the event of %s: %w", task, err)
	}
	return b, nil
}

// removeEvent removes a finished job's event file.
func (s store) removeEvent(task string) {
	_ = s.fs().Remove(s.eventPath(task))
}
