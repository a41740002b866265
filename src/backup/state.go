package backup

import (
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// State is this machine's backup record (instance.BackupState).
type State struct {
	Repo   string `json:"repo"`
	Device string `json:"device"`
	// Every is the schedule's interval (hobbs backup schedule); 0: none.
	Every Duration `json:"every,omitempty"`
	// LastOK is the last backup that succeeded; Last the last attempt.
	LastOK *Run `json:"last_ok,omitempty"`
	Last   *Run `json:"last,omitempty"`
	// Pruned is when the repository was last pruned (Backup prunes at
	// most every PruneEvery).
	Pruned time.Time `json:"pruned,omitempty"`
	// Kept are this device's snapshots in the repository, as the last
	// forget (or Init) left them and the backups since added; Known says
	// the list is whole (else the next backup asks restic).
	Kept  []Kept `json:"kept,omitempty"`
	Known bool   `json:"known,omitempty"`
	// Told is the failure or overdue time the owner was last told of
	// (Notice tells each once).
	Told string `json:"told,omitempty"`
	// Synced is, per other device, the snapshot of it this device merged
	// last (hobbs sync): the base of the next sync from it.
	Synced map[string]Synced `json:"synced,omitempty"`
}

// Synced is the last sync from one device.
type Synced struct {
	Snapshot string    `json:"snapshot"`
	Time     time.Time `json:"time"`
	// Memory is the memory merge of Snapshot while it is not known to
	// have finished (pending.go).
	Memory *PendingMemory `json:"memory,omitempty"`
}

// Run is one backup's outcome.
type Run struct {
	Time     time.Time `json:"time"`
	Snapshot string    `json:"snapshot,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// Duration is a time.Duration written as "24h0m0s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// maxState bounds what is read of the record.
const maxState = 1 << 20

// LoadState reads in's backup record; a missing one is the zero State
// (with ok false).
func LoadState(in instance.Instance) (st State, ok bool, err error) {
	b, err := in.FS().ReadFile(in.BackupState(), maxState)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, errs.Wrap(errs.Failure, err, "read %s", in.Rel(in.BackupState()))
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, false, errs.Wrap(errs.Failure, err, "%s", in.Rel(in.BackupState()))
	}
	return st, true, nil
}

// updateState changes in's record under its lock.
func updateState(in instance.Instance, change func(*State)) error {
	unlock, err := lockRes(in, "backup")
	if err != nil {
		return err
	}
	defer unlock()
	st, _, err := LoadState(in)
	if err != nil {
		return err
	}
	change(&st)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Failure, err, "encode the backup record")
	}
	if err := in.FS().Write(in.BackupState(), append(b, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "write %s", in.Rel(in.BackupState()))
	}
	return nil
}

// Kept is one snapshot of the device's.
type Kept struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
}
