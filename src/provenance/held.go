package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Held text. What a tainted session changed is held as a copy: the host
// reads the file once (through the safe-open layer, within maxFile), writes
// those bytes to provenance/held/ID — a new file in a directory no session
// mounts — and records their SHA-256 as the item's After. The file in the
// share is then replaced (or removed), so whatever the session left behind
// (a hard link to the file, an open descriptor in a process that outlived
// it) reaches an inode that is neither in effect nor the held copy.
//
// Approving writes the held copy into place, atomically (a new file renamed
// over the path), and only once every change approved together has been
// checked: each held copy still hashes to its After (what hobbs review show
// showed the owner), and each path still holds what its change was held
// against. A check that fails changes nothing; a write that fails puts back
// what the approval had already written.
//
// A file Hobbs cannot copy as text — a link, a FIFO or another special
// entry, or one over maxFile — is moved into held/ID as an entry (never
// followed or read) and can be rejected, not approved: the owner cannot
// be shown it.

// isText reports whether h is the hash of held text (a SHA-256), not the
// name of an entry Hobbs did not copy (special:, large:).
func isText(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// holdCopy keeps the file at p as held change id: a copy of its bytes for
// a regular file within maxFile, whose hash it returns; otherwise the entry
// itself, moved, and a's name for it.
func (s *Store) holdCopy(p, id string, a fileState) (string, error) {
	if err := s.Root.MkdirAll(s.rel("held"), 0o700); err != nil {
		return "", err
	}
	if isText(a.Hash) {
		b, err := s.Root.ReadFile(p, maxFile)
		if err == nil {
			if err := s.Root.Write(s.rel("held", id), b, 0o600); err != nil {
				return "", err
			}
			return hashOf(b), nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// It became something Hobbs does not read as text since the
		// scan (it grew past maxFile, or is no regular file now): held
		// as an entry, below.
		var tooLarge *safefile.TooLargeError
		if errors.As(err, &tooLarge) {
			a.Hash = fmt.Sprintf("large:%d:%d", tooLarge.Size, a.Ctime)
		} else {
			a.Hash = fmt.Sprintf("special:unread:%d", a.Ctime)
		}
	}
	if err := s.Root.Rename(p, s.rel("held", id)); err != nil {
		return "", err
	}
	return a.Hash, nil
}

// heldText returns the held copy of it, checked against its hash: the
// text the owner is shown and an approval writes.
func (s *Store) heldText(it *Item) ([]byte, error) {
	if !isText(it.After) {
		return nil, &errs.Error{Code: errs.Failure,
			Msg:    fmt.Sprintf("%s: %s is not text Hobbs copied (%s): it can be rejected, not approved", it.ID, it.Path, it.After),
			Advice: errs.NewAdvice(NotText, "id", it.ID, "held", s.rel("held", it.ID))}
	}
	b, err := s.Root.ReadFile(s.rel("held", it.ID), maxFile)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "%s: the held copy", it.ID)
	}
	if hashOf(b) != it.After {
		return nil, &errs.Error{Code: errs.Failure,
			Msg:    fmt.Sprintf("%s: the held copy (%s) is not the text that was held: it changed since", it.ID, s.rel("held", it.ID)),
			Advice: errs.NewAdvice(HeldCopyChanged, "id", it.ID)}
	}
	return b, nil
}

// effect is what a path holds now: its bytes, whether it exists, whether
// its owner can run it.
type effect struct {
	text   []byte
	exists bool
	exec   bool
}

// inEffect reads what is at p now (a file Hobbs cannot read as text is an
// error: it is not what any change was held against).
func (s *Store) inEffect(p string) (effect, error) { return effectAt(s.Root, p) }

// effectAt reads what is at p in root now (inEffect).
func effectAt(root safefile.Root, p string) (effect, error) {
	b, err := root.ReadFile(p, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return effect{}, nil
	}
	if err != nil {
		return effect{}, err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return effect{}, err
	}
	return effect{text: b, exists: true, exec: fi.Mode().Perm()&0o100 != 0}, nil
}

// sameText reports whether a and b are the same text for a file of kind:
// for a memory, its last_accessed (which every session's context load
// updates) does not count.
func sameText(kind string, a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	return kind == "memory" && bytes.Equal(memory.WithoutAccess(a), memory.WithoutAccess(b))
}

// asBefore reports whether cur is what it was held against: no file for a
// created one, the content hashed Before (its last_accessed aside, for a
// memory) otherwise.
func (s *Store) asBefore(st *state, it *Item, cur effect) bool {
	if it.Before == "" {
		return !cur.exists
	}
	if !cur.exists {
		return false
	}
	if hashOf(cur.text) == it.Before {
		return true
	}
	before, err := s.getObject(st, it.Before)
	return err == nil && sameText(it.Kind, before, cur.text)
}

// approval is one change an approval puts in effect, checked.
type approval struct {
	it   *Item
	text []byte // the held copy (nil: a removal)
	prev effect // what was at its path before the approval
}

// checkApprovals checks every change of items (in the order given) before
// anything is written: its held copy still hashes to what was held, and its
// path holds what it was held against — in the baseline and in the share —
// counting the changes approved before it in the same approval.
func (s *Store) checkApprovals(st *state, items []*Item) ([]approval, error) {
	var out []approval
	next := map[string]effect{} // what an earlier change of this approval puts at a path
	for _, it := range items {
		a := approval{it: it}
		if it.After != "" {
			var err error
			if a.text, err = s.heldText(it); err != nil {
				return nil, err
			}
		}
		cur, ok := next[it.Path]
		if !ok {
			var err error
			if cur, err = s.inEffect(it.Path); err != nil {
				return nil, errs.Wrap(errs.Failure, err, "%s: %s as it is now", it.ID, it.Path)
			}
			a.prev = cur
			if err := s.unchangedSince(st, it); err != nil {
				return nil, err
			}
		} else {
			a.prev = cur
		}
		if !s.asBefore(st, it, cur) {
			return nil, laterChange(it)
		}
		next[it.Path] = effect{text: a.text, exists: it.After != "", exec: it.Exec}
		out = append(out, a)
	}
	return out, nil
}

func laterChange(it *Item) error {
	return &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s: %s changed since this change was held; nothing was approved", it.ID, it.Path),
		Advice: errs.NewAdvice(LaterChange, "id", it.ID)}
}

// put writes e's text at p atomically (or removes p, when e does not
// exist), making its directory; 0755 for a file its owner runs, else 0644
// (layer.Perm).
func (s *Store) put(p string, e effect) error {
	if !e.exists {
		if err := s.Root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.removeEmptyParents(p)
		return nil
	}
	if err := s.Root.MkdirAll(filepath.Dir(filepath.Join(s.Root.Dir(), p)), 0o755); err != nil {
		return err
	}
	return s.Root.Write(p, e.text, layer.Perm(e.exec))
}

// apply writes each checked approval into place and records it as the
// baseline, counting in done the approvals it has begun to write (a
// failed one included): the caller puts those back (putBack) unless the
// record of all of them is saved.
func (s *Store) apply(st *state, as []approval, done *int) error {
	for i, a := range as {
		*done = i + 1
		if err := s.applyOne(st, a); err != nil {
			return errs.Wrap(errs.Failure, err, "%s: put %s in effect", a.it.ID, a.it.Path)
		}
	}
	return nil
}

// putBack puts what was at the paths of as before they were written back
// in place, last first.
func (s *Store) putBack(as []approval) {
	for j := len(as) - 1; j >= 0; j-- {
		_ = s.put(as[j].it.Path, as[j].prev) // best effort: the approval's error says what failed
	}
}

func (s *Store) applyOne(st *state, a approval) error {
	it := a.it
	if err := s.put(it.Path, effect{text: a.text, exists: a.text != nil, exec: it.Exec}); err != nil {
		return err
	}
	if a.text == nil {
		delete(st.Baseline, it.Path)
		return nil
	}
	fi, err := s.Root.Lstat(it.Path)
	if err != nil {
		return err
	}
	fst := statOf(fi)
	fst.Hash = it.After
	fst.Racy = true // written just now: read its content next time
	if err := st.pack.put(it.After, a.text); err != nil {
		return err
	}
	// A memory left unstamped (its lock busy) is approved all the same;
	// its next kept change stamps it.
	st.Baseline[it.Path], _ = s.stamp(st, it.Path, fst, "approved by the owner ("+it.ID+"); "+record(it.Sessions))
	return nil
}

// Pending is one change of a change set to hold that is not in the shares
// (a session's own layer, say): the file at Path (slash-separated,
// relative to the instance, clean; a watched file), the text it had where
// the change set started (Base, with HadBase) and the text the change set
// gives it (Text), or Removed.
type Pending struct {
	Path    string
	Base    []byte
	HadBase bool
	Text    []byte
	Removed bool
}

// HoldSet holds changes as the changes of sessions (the first: the session
// whose change set it is) and returns the items it made: each text is
// copied into the store with its hash, as hold does, and the shares are
// not touched (what the change set holds was never in effect). An approval
// puts a text in effect only while the path holds its Base.
func (s *Store) HoldSet(sessions []Session, changes []Pending) ([]Item, error) {
	if len(sessions) == 0 {
		return nil, errs.Failf("provenance: a change set to hold names no session")
	}
	var out []Item
	err := s.locked(func(st *state) error {
		out = nil
		for _, c := range changes {
			kind, ok := Watched(c.Path)
			if !ok || !filepath.IsLocal(c.Path) || path.Clean(c.Path) != c.Path {
				return errs.Failf("provenance: %s is not a watched file", c.Path)
			}
			if !c.Removed && len(c.Text) > maxFile {
				return errs.Failf("provenance: %s is larger than %d bytes", c.Path, maxFile)
			}
			st.Next++
			it := &Item{ID: fmt.Sprintf("r%d", st.Next), Path: c.Path, Kind: kind, Sessions: sessions, Found: s.now(), Status: Waiting}
			switch {
			case !c.HadBase:
				it.Change = "created"
			case c.Removed:
				it.Change = "removed"
			default:
				it.Change = "changed"
			}
			if c.HadBase {
				it.Before = hashOf(c.Base)
				if err := st.pack.put(it.Before, c.Base); err != nil {
					return err
				}
			}
			if !c.Removed {
				if err := s.Root.MkdirAll(s.rel("held"), 0o700); err != nil {
					return err
				}
				if err := s.Root.Write(s.rel("held", it.ID), c.Text, 0o600); err != nil {
					return errs.Wrap(errs.Failure, err, "hold %s for review", c.Path)
				}
				it.After = hashOf(c.Text)
			}
			st.Items = append(st.Items, it)
			out = append(out, *it)
			s.Audit.Record(audit.Entry{Event: "provenance.hold", Subject: c.Path, Outcome: "held",
				Detail: map[string]any{"id": it.ID, "change": it.Change, "session": sessions[0].Name, "hash": it.After}}, nil)
		}
		return nil
	})
	return out, err
}

// shareWait is how long an approval waits for the lock of a share it
// writes (lockShares), which a live session's hobbs command may hold.
var shareWait = 10 * time.Second

// lockedShares are the shares with a lock of their own (memory/.lock,
// playbooks/.lock, agents/.lock: instance.Lock), which every writer of
// the share, the agent's included, takes before it re-reads and writes.
var lockedShares = map[string]bool{"memory": true, "playbooks": true, "agents": true}

// lockShares takes the lock of each share a path of items is in (in a
// fixed order, after the store's own lock, as stamp does), so that what
// checkApprovals reads is still there when apply writes; st records the
// memory lock as held, for stamp. A lock still taken after shareWait is an
// error: nothing is checked or written.
func (s *Store) lockShares(st *state, items []*Item) (func(), error) {
	need := map[string]bool{}
	for _, it := range items {
		if share, _, _ := strings.Cut(it.Path, "/"); lockedShares[share] {
			need[share] = true
		}
	}
	shares := slices.Sorted(maps.Keys(need))
	var unlocks []func()
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
		st.memoryLocked = false
	}
	for _, share := range shares {
		if err := s.Root.MkdirAll(share, 0o755); err != nil {
			release()
			return nil, err
		}
		unlock, err := s.Root.Lock(filepath.Join(s.Root.Dir(), share, ".lock"), shareWait)
		if err != nil {
			release()
			return nil, errs.Wrap(errs.Failure, err, "%s is being changed (%s/.lock is held, by a session's hobbs command perhaps); nothing was approved, try again", share, share)
		}
		unlocks = append(unlocks, unlock)
	}
	st.memoryLocked = need["memory"]
	return release, nil
}
