package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// hobbs serve's state is host-only (instance serve/, which no session
// mounts): the deliveries seen in the replay window (deliveries.json), the
// run queue (jobs/, queue.go) and the shed counts (shed.json, status.go).
// Each file is written atomically, a shared one under its own lock
// (.locks/), so a crash or a SIGTERM leaves the old file or the new one; a
// file that does not parse is reported and never rewritten. events/ is
// where an older hobbs kept the queued runs' events (read when its queue
// is converted).

// ReplayWindow is how long a delivery id is remembered.
const ReplayWindow = 24 * time.Hour

// maxSeen bounds the delivery ids kept: signed deliveries only reach the
// record, so only the secret's holders can fill it.
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

// Seen records delivery id of trigger at now and reports whether it was
// seen already within ReplayWindow. Ids older than the window are dropped.
func (s store) Seen(trigger, id string, now time.Time) (bool, error) {
	unlock, err := s.lock("deliveries")
	if err != nil {
		return false, err
	}
	defer unlock()
	seen := map[string]time.Time{}
	if err := s.read("deliveries.json", &seen); err != nil {
		return false, err
	}
	key := trigger + " " + id
	if t, ok := seen[key]; ok && now.Sub(t) < ReplayWindow {
		return true, nil
	}
	for k, t := range seen {
		if now.Sub(t) >= ReplayWindow {
			delete(seen, k)
		}
	}
	if len(seen) >= maxSeen {
		return false, errs.Failf("%d deliveries in the last %v: refusing more until older ones expire", len(seen), ReplayWindow)
	}
	seen[key] = now.UTC()
	return false, s.write("deliveries.json", seen)
}

// Forget removes delivery id of trigger from the record: a delivery
// refused after its signature held (its playbook may not run, its body
// does not parse, it was not queued) may be delivered again once that is
// fixed.
func (s store) Forget(trigger, id string) error {
	unlock, err := s.lock("deliveries")
	if err != nil {
		return err
	}
	defer unlock()
	seen := map[string]time.Time{}
	if err := s.read("deliveries.json", &seen); err != nil {
		return err
	}
	delete(seen, trigger+" "+id)
	return s.write("deliveries.json", seen)
}

// readEvent reads an event file an older hobbs wrote.
func (s store) readEvent(task string) ([]byte, error) {
	b, err := s.fs().ReadFile(s.eventPath(task), instance.MaxServeFile)
	if err != nil {
		return nil, fmt.Errorf("the event of %s: %w", task, err)
	}
	return b, nil
}

// removeEvent removes an event file an older hobbs wrote, once converted.
func (s store) removeEvent(task string) {
	_ = s.fs().Remove(s.eventPath(task))
}
