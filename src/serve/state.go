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
