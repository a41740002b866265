package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// SessionList is the session file in which a session finds the changes
// waiting for review when it started, as the host listed them: the
// launcher writes it and mounts it read-only, so the agent can see what
// waits but neither clear nor change it.
const SessionList = "/run/hobbs-session/review.json"

// maxSessionList bounds what a session reads of SessionList.
const maxSessionList = 16 << 20

// ForReview returns the instance's store for hobbs review. Only the host
// decides: inside a session (HOBBS_CONTEXT=container) the store lists
// SessionList and refuses to show or decide, for a session has no store
// to review, nor the right to.
func ForReview(root safefile.Root, log *audit.Logger) *Store {
	s := New(root, log)
	if os.Getenv("HOBBS_CONTEXT") == "container" {
		s.sessionList = SessionList
	}
	return s
}

// errInSession refuses what only the host may do.
var errInSession = errs.Usagef("only the owner, on the host, shows and decides held changes").Advise(ListInSession)

// WriteSessionList writes the waiting changes to w as SessionList holds them.
func (s *Store) WriteSessionList(w io.Writer) error {
	items, err := s.List(false)
	if err != nil {
		return err
	}
	if items == nil {
		items = Items{}
	}
	return json.NewEncoder(w).Encode(items)
}

// readSessionList reads the host's list of held changes for this session.
func (s *Store) readSessionList() (Items, error) {
	f, err := os.Open(s.sessionList)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Missingf("this session has no list of held changes (%s)", s.sessionList).
			Advise(NoSessionList)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var items Items
	if err := json.NewDecoder(io.LimitReader(f, maxSessionList)).Decode(&items); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "%s", s.sessionList)
	}
	return items, nil
}

// Items are held changes.
type Items []Item

// Write prints the list (WriteList).
func (l Items) Write(w io.Writer) error { return WriteList(w, l) }

// List returns the held changes, oldest first: only those waiting unless
// all is set.
func (s *Store) List(all bool) (Items, error) {
	if s.sessionList != "" {
		if all {
			return nil, errs.Usagef("a session sees only the changes waiting for review, not --all")
		}
		return s.readSessionList()
	}
	st, err := s.readItems()
	if err != nil {
		return nil, err
	}
	out := Items{} // none is [] in JSON, as every listing's
	for _, it := range st.Items {
		if all || it.Status == Waiting {
			out = append(out, *it)
		}
	}
	return out, nil
}

// read loads the state without the lock (a reader sees the last state
// saved: saves are atomic).
func (s *Store) read() (*state, error) {
	return s.load()
}

// readItems is read without the baseline, for what needs only the items.
func (s *Store) readItems() (*state, error) {
	raw, err := s.readState()
	if err != nil {
		return nil, err
	}
	return s.parse(raw, parseItems)
}

// Content returns what the held change id had before and has after (nil
// where the file did not exist, or the held entry is not text): the held
// copy checked against the hash recorded when it was held.
func (s *Store) Content(id string) (before, after []byte, err error) {
	st, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	it, err := find(st, id)
	if err != nil {
		return nil, nil, err
	}
	if isText(it.Before) {
		if before, err = s.getObject(st, it.Before); err != nil {
			return nil, nil, errs.Wrap(errs.Failure, err, "%s: the content before", id)
		}
	}
	if isText(it.After) {
		if after, err = s.heldText(it); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

func find(st *state, id string) (*Item, error) {
	for _, it := range st.Items {
		if it.ID == id {
			return it, nil
		}
	}
	return nil, &errs.Error{Code: errs.Usage, Msg: "no held change " + id, Advice: errs.NewAdvice(NoHeldChange)}
}

// Select returns the ids of the waiting changes found at the end of session
// name (or while it was live).
func (s *Store) Select(session string) ([]string, error) {
	st, err := s.readItems()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, it := range st.Items {
		if it.Status != Waiting {
			continue
		}
		for _, ses := range it.Sessions {
			if ses.Name == session {
				ids = append(ids, it.ID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil, &errs.Error{Code: errs.Usage, Msg: "no change of session " + session + " waits", Advice: errs.NewAdvice(NoSessionChange)}
	}
	return ids, nil
}

// Decide approves or rejects (verb) the held changes ids, or, with
// session set instead, every waiting change found while it was live, and
// returns how many.
func (s *Store) Decide(verb string, ids []string, session string) (int, error) {
	if s.sessionList != "" {
		return 0, errInSession
	}
	if (session == "") == (len(ids) == 0) {
		return 0, errs.Usagef("name the changes (IDs) or --all-from SESSION, not both")
	}
	if session != "" {
		var err error
		if ids, err = s.Select(session); err != nil {
			return 0, err
		}
	}
	if verb == "approve" {
		return len(ids), s.Approve(ids)
	}
	return len(ids), s.Reject(ids)
}

// Approve puts the held changes ids in effect, all or none: each held
// copy is written atomically into place (a removal removes the file) and
// becomes the baseline, once every one of them is checked (checkApprovals):
// its copy is still the text that was held, its path still holds what it
// was held against (else: review its newer change first, or reject). The
// check and the writes run under the locks of the shares written
// (lockShares). A write that fails, or a record not saved, puts back what
// the approval had written, in the shares and in workspaces alike.
func (s *Store) Approve(ids []string) error {
	return s.decideAll(ids, "approve", Approved, func(st *state, items []*Item) error {
		// A workspace's instruction file (held from a tainted session's
		// layer) is checked with the rest, before anything is written.
		var ws, shares []*Item
		for _, it := range items {
			if it.Volume != "" {
				// Written by the next session's start (ScopeWrites).
				if _, err := s.scopeText(it); err != nil {
					return err
				}
				it.Pending = true
				continue
			}
			if it.Workspace != "" {
				ws = append(ws, it)
			} else {
				shares = append(shares, it)
			}
		}
		wsText := make([][]byte, len(ws))
		for i, it := range ws {
			b, err := s.checkWorkspace(it)
			if err != nil {
				return err
			}
			wsText[i] = b
		}
		unlock, err := s.lockShares(st, shares)
		if err != nil {
			return err
		}
		var as []approval
		done := 0
		// What each workspace file was before the approval wrote it.
		var wsPrev []effect
		// Once the record is saved, or not: what was written is put back
		// unless it is recorded, still under the shares' locks.
		st.after = append(st.after, func(saved bool) {
			if !saved {
				s.putBack(as[:done])
				for i := len(wsPrev) - 1; i >= 0; i-- {
					// Best effort: the approval's error says what failed.
					_ = writeWorkspace(safefile.Beneath(ws[i].Workspace), ws[i].Path, wsPrev[i])
				}
			}
			unlock()
		})
		if as, err = s.checkApprovals(st, shares); err != nil {
			return err
		}
		if err := s.apply(st, as, &done); err != nil {
			return err
		}
		for i, it := range ws {
			w := safefile.Beneath(it.Workspace)
			prev, err := effectAt(w, it.Path)
			if err != nil {
				return err
			}
			wsPrev = append(wsPrev, prev)
			if err := writeWorkspace(w, it.Path, effect{text: wsText[i], exists: wsText[i] != nil, exec: it.Exec}); err != nil {
				return errs.Wrap(errs.Failure, err, "%s: write %s in the workspace", it.ID, it.Path)
			}
		}
		return nil
	})
}

// unchangedSince refuses to approve it unless the baseline holds what the
// change was held against (for a memory, its last_accessed aside).
func (s *Store) unchangedSince(st *state, it *Item) error {
	if len(it.Sessions) > 0 && it.Sessions[0].Layered {
		// Held from a session's layer against the file then in effect,
		// which later merges change without the baseline: the file itself.
		cur, err := s.Root.ReadFile(it.Path, maxFile)
		h := ""
		if err == nil {
			sum := sha256.Sum256(cur)
			h = hex.EncodeToString(sum[:])
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if h == it.Before {
			return nil
		}
		return &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s: %s changed since this change was held", it.ID, it.Path),
			Advice: errs.NewAdvice(LaterChange)}
	}
	b, had := st.Baseline[it.Path]
	switch {
	case it.Before == "" && !had, had && b.Hash == it.Before:
		return nil
	case had && it.Before != "" && it.Kind == "memory":
		x, err1 := s.getObject(st, b.Hash)
		y, err2 := s.getObject(st, it.Before)
		if err1 == nil && err2 == nil && sameText(it.Kind, x, y) {
			return nil
		}
	}
	return laterChange(it)
}

// Reject keeps each held change out of effect for good: the shares keep
// the state before it; the held copy stays in the store (provenance/held/ID)
// for the owner to inspect.
func (s *Store) Reject(ids []string) error {
	return s.decideAll(ids, "reject", Rejected, func(*state, []*Item) error { return nil })
}

// decideAll decides the changes ids (verb, to) with apply, all or none:
// when apply fails nothing is saved, and each change's audit line says so.
func (s *Store) decideAll(ids []string, verb, to string, apply func(*state, []*Item) error) error {
	if len(ids) == 0 {
		return errs.Usagef("name the changes to %s", verb).Advise(NameTheChanges)
	}
	return s.locked(func(st *state) error {
		var items []*Item
		seen := map[string]bool{}
		for _, id := range ids {
			it, err := find(st, id)
			if err != nil {
				return err
			}
			if it.Status != Waiting {
				return errs.Failf("%s was %s on %s", id, it.Status, it.Decided.Format("2006-01-02 15:04"))
			}
			if !seen[id] {
				seen[id] = true
				items = append(items, it)
			}
		}
		sort.SliceStable(items, func(i, j int) bool { return items[i].Found.Before(items[j].Found) })
		err := apply(st, items)
		if err == nil {
			for _, it := range items {
				it.Status, it.Decided = to, s.now()
			}
		}
		// Audited once the decision is recorded, or has failed.
		st.after = append(st.after, func(saved bool) {
			aerr := err
			if aerr == nil && !saved {
				aerr = errs.Failf("the provenance record was not saved")
			}
			for _, it := range items {
				s.Audit.Record(audit.Entry{Event: "provenance." + verb, Subject: it.Path,
					Detail: map[string]any{"id": it.ID, "change": it.Change, "session": it.Sessions[0].Name, "hash": it.After}}, aerr)
			}
		})
		return err
	})
}
