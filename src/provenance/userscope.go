package provenance

import (
	"errors"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// The Claude Code user scope on an instance's state volume (CLAUDE.md,
// settings.json, skills/, agents/, commands/ …): what a tainted session
// changed there is held like any layer change, with the volume named
// (LayerChange.Volume). The host cannot read or write the volume; the
// launcher reads it through the engine. So an approval only marks the
// item Pending; the next session's start, which reads the scope before
// its agent starts, asks for the pending writes (ScopeWrites), writes each
// whose file is still what it was held against, and reports which it
// wrote and which it found changed (ScopeApplied): those go back to
// waiting, to be reviewed again.

// UserScopeKind is the kind of a held user-scope file.
const UserScopeKind = "user-scope"

// ScopeWrite is one approved user-scope change waiting to be written.
type ScopeWrite struct {
	ID   string
	Path string // relative to the scope's directory
	// Before is the hash the file must still have ("": it must be absent).
	Before string
	// Text is what to write; nil removes the file.
	Text []byte
}

// scopeText is the held text of a user-scope item (nil: a removal),
// checked against its hash.
func (s *Store) scopeText(it *Item) ([]byte, error) {
	if it.After == "" {
		return nil, nil
	}
	return s.heldText(it)
}

// ScopeWrites lists the approved changes of volume's user scope not yet
// written, oldest first.
func (s *Store) ScopeWrites(volume string) ([]ScopeWrite, error) {
	var out []ScopeWrite
	err := s.locked(func(st *state) error {
		for _, it := range st.Items {
			if it.Volume != volume || !it.Pending || it.Status != Approved {
				continue
			}
			b, err := s.scopeText(it)
			if err != nil {
				return errs.Wrap(errs.Failure, err, "the approved %s %s", it.ID, it.Path)
			}
			out = append(out, ScopeWrite{ID: it.ID, Path: it.Path, Before: it.Before, Text: b})
		}
		return nil
	})
	return out, err
}

// ScopeApplied records what a session's start did with ScopeWrites: the
// ids written are no longer pending; the ids found changed since they
// were held are waiting for review again.
func (s *Store) ScopeApplied(written, changed []string) error {
	if len(written)+len(changed) == 0 {
		return nil
	}
	return s.locked(func(st *state) error {
		var errsAll []error
		for _, id := range written {
			if it, err := find(st, id); err == nil {
				it.Pending = false
			} else {
				errsAll = append(errsAll, err)
			}
		}
		for _, id := range changed {
			if it, err := find(st, id); err == nil {
				it.Pending, it.Status = false, Waiting
			} else {
				errsAll = append(errsAll, err)
			}
		}
		return errors.Join(errsAll...)
	})
}

// ScopeEnd is what a session's end found on the state volume.
type ScopeEnd struct {
	// Wrote are the transcripts (paths relative to the state volume's
	// directory) the session created or appended to.
	Wrote []string
	// Unknown, when not nil, is why the volume could not be read at the
	// end: the session may have resumed a tainted conversation.
	Unknown error
}

// resumed taints ses when it wrote a transcript a tainted session wrote
// (a resumed conversation appends to its transcript), or when what it
// wrote is not known.
func resumed(st *state, ses *Session, scope ScopeEnd) {
	if scope.Unknown != nil {
		ses.Tainted = true
		ses.Why = appendOnce(ses.Why, "the conversations it wrote are not known: "+scope.Unknown.Error())
	}
	for _, t := range scope.Wrote {
		if _, ok := st.Transcripts[t]; ok {
			ses.Tainted = true
			ses.Why = appendOnce(ses.Why, "resumed tainted conversation "+t)
		}
	}
}
