package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// A sync's memory merge and the record of its base are one step as the
// instance sees them. Sync keeps the new base and records it, with the
// memory merge as pending (Synced.Memory), before it writes a memory, and
// clears the pending merge after. A sync that finds one pending (the last
// failed or was killed in between) finishes it first (finishMemory): a
// memory written since the merge began (its modification time at or after
// the mark's) has been merged; the others merge now, against the base the
// merge began with, kept beside the new one until the merge is done. So
// no memory takes the same snapshot's change twice, and none is left
// without it.

// PendingMemory is a sync's memory merge not known to have finished.
type PendingMemory struct {
	// Base is the snapshot the merge is against ("": none, a first sync),
	// kept as SyncBase/previous.
	Base string `json:"base,omitempty"`
	// Since is the mark's time: a memory written at or after it was
	// written by the merge.
	Since time.Time `json:"since"`
	// Paths are the memory's files the merge takes (relative to the
	// memory directory).
	Paths []string `json:"paths"`
}

const (
	keptInstance = "instance"
	keptPrevious = "previous"
	keptSnapshot = "snapshot"
	keptMark     = "memory-since"
)

// keepBase makes theirs (staged) the kept base of the next sync from its
// device (the snapshot id), beside the instance at keep. Without a base,
// theirs is whole and moves there. With one (base, the kept base or one
// staged again), theirs is sparse: the kept base takes each path of
// changed in place but those own says it keeps (the policy and grants
// not merged), its own file moving to previous, which the memory merge
// reads as its base. The snapshot file is removed first and written last:
// a kept base without it is not trusted (syncBase), so a sync killed
// half-way stages the base again.
func keepBase(keep string, base *instance.Instance, theirs instance.Instance, changed []string, own func(string) bool, id, staging string) (*instance.Instance, instance.Instance, error) {
	fail := func(err error) (*instance.Instance, instance.Instance, error) {
		return nil, instance.Instance{}, errs.Wrap(errs.Failure, err, "keep the base %s", keep)
	}
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return fail(err)
	}
	kr := safefile.Beneath(keep)
	if err := kr.Remove(keptSnapshot); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	previous := filepath.Join(keep, keptPrevious)
	if err := os.RemoveAll(previous); err != nil {
		return fail(err)
	}
	inst := filepath.Join(keep, keptInstance)
	from := theirs.Root
	if base != nil {
		from = base.Root
	}
	if from != inst {
		if _, err := os.Lstat(inst); err == nil {
			// Not the base (one staged again, or none): removed with the
			// staging directory.
			if err := os.Rename(inst, filepath.Join(staging, "stale-base")); err != nil {
				return fail(err)
			}
		}
		if err := os.Rename(from, inst); err != nil {
			return fail(err)
		}
	}
	var prev *instance.Instance
	if base != nil {
		if err := os.Mkdir(previous, 0o700); err != nil {
			return fail(err)
		}
		for _, p := range changed {
			if own(p) {
				continue
			}
			if err := take(inst, previous, theirs.Root, filepath.FromSlash(p)); err != nil {
				return fail(err)
			}
		}
		p, _ := instance.At(previous)
		prev = &p
	}
	if err := kr.Write(keptSnapshot, []byte(id+"\n"), 0o600); err != nil {
		return fail(err)
	}
	kept, _ := instance.At(inst)
	return prev, kept, nil
}

// take moves the file rel of inst (if any; a directory where theirs has
// a file, whole) to previous and the regular file rel of theirs (if any)
// to inst.
// Each directory is one of these trees, made by this package
// (stageSnapshot, keepBase, KeepBase); no link moves.
func take(inst, previous, theirs, rel string) error {
	move := func(from, to string, dirs bool) error {
		fi, err := os.Lstat(from)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // none there, or a file where a directory was
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() && !(dirs && fi.IsDir()) {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		return os.Rename(from, to)
	}
	if err := move(filepath.Join(inst, rel), filepath.Join(previous, rel), true); err != nil {
		return err
	}
	// A directory of theirs is taken file by file (each is in changed).
	return move(filepath.Join(theirs, rel), filepath.Join(inst, rel), false)
}

// mark writes the mark of a memory merge beside the kept base and
// returns its modification time.
func mark(keep string) (time.Time, error) {
	kr := safefile.Beneath(keep)
	if err := kr.Write(keptMark, nil, 0o600); err != nil {
		return time.Time{}, errs.Wrap(errs.Failure, err, "mark the memory merge in %s", keep)
	}
	fi, err := kr.Lstat(keptMark)
	if err != nil {
		return time.Time{}, errs.Wrap(errs.Failure, err, "mark the memory merge in %s", keep)
	}
	return fi.ModTime(), nil
}

// memoryDone clears the pending memory merge of the sync from device
// and removes what it read.
func memoryDone(in instance.Instance, keep, device string) error {
	if err := updateState(in, func(s *State) {
		if sy, ok := s.Synced[device]; ok {
			sy.Memory = nil
			s.Synced[device] = sy
		}
	}); err != nil {
		return err
	}
	_ = os.RemoveAll(filepath.Join(keep, keptPrevious))
	_ = os.Remove(filepath.Join(keep, keptMark))
	return nil
}

// finishMemory finishes the memory merge a sync from device left pending
// (m.snap the snapshot it merged): the paths not written since it began
// merge against the base it began with; it is cleared after.
func (m *merger) finishMemory(p *PendingMemory) error {
	keep := SyncBase(m.ours, m.snap.Device)
	theirs, _ := instance.At(filepath.Join(keep, keptInstance))
	var base *instance.Instance
	if p.Base != "" {
		b, _ := instance.At(filepath.Join(keep, keptPrevious))
		base = &b
	}
	m.theirs, m.base = theirs, base
	ok := true
	for _, in := range []*instance.Instance{&theirs, base} {
		if in != nil {
			if fi, err := os.Lstat(in.Root); err != nil || !fi.IsDir() {
				ok = false
			}
		}
	}
	var todo []string
	for _, rel := range p.Paths {
		fi, err := m.ours.FS().Lstat(filepath.Join(m.ours.MemoryDir(), filepath.FromSlash(rel)))
		switch {
		case err == nil && !fi.ModTime().Before(p.Since):
			// Written since the merge began.
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return errs.Wrap(errs.Failure, err, "memory/%s", rel)
		default:
			todo = append(todo, rel)
		}
	}
	if len(todo) > 0 && !ok {
		m.res.Problems = append(m.res.Problems, fmt.Sprintf("the memory merge of snapshot %s of %s did not finish and what it read is gone: %d memory file(s) not merged (%s, …)",
			m.snap.ShortID, m.snap.Device, len(todo), path.Join("memory", todo[0])))
		todo = nil
	}
	if err := m.memory(todo); err != nil {
		return err
	}
	return memoryDone(m.ours, keep, m.snap.Device)
}
