package provenance

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// What waits, as sessions see it. A session may know what the owner has
// still to review — the agent can then say so, and not redo what waits —
// but never change it: the list is the host's. Whenever the store is
// saved, the host writes the waiting changes to provenance/waiting.json
// (host-only, small: at most maxWaitingItems items, without the hosts each
// session read); the launcher copies it into each session's private files
// at the start, and the agent's container mounts that copy read-only at
// SessionWaitingFile. Nothing the agent does there reaches the host, which
// never reads it back.

const (
	// WaitingFile is the list's name in the store's directory.
	WaitingFile = "waiting.json"
	// SessionWaitingFile is where the agent finds it, read-only (a file
	// of the launcher's session files).
	SessionWaitingFile = "/run/hobbs-session/review.json"
	// maxWaitingItems bounds the items listed (Count says how many wait:
	// a session is shown the oldest);
	// maxWaiting the file's size.
	maxWaitingItems = 200
	maxWaiting      = 1 << 20
)

// WaitList is the list of changes waiting for review.
type WaitList struct {
	Count int   `json:"count"` // how many wait, listed or not
	Items Items `json:"items"` // the oldest first, at most maxWaitingItems
	// Unknown, when set, says why the list could not be read: what waits
	// is not known.
	Unknown string `json:"unknown,omitempty"`
}

// waitingOf is st's list.
func waitingOf(st *state) WaitList {
	w := WaitList{Items: Items{}}
	for _, it := range st.Items {
		if it.Status != Waiting {
			continue
		}
		w.Count++
		if len(w.Items) == maxWaitingItems {
			continue
		}
		c := *it
		c.Sessions = make([]Session, len(it.Sessions))
		for i, s := range it.Sessions {
			s.Read = nil // the reasons name what tainted it; the whole list can be long
			c.Sessions[i] = s
		}
		w.Items = append(w.Items, c)
	}
	return w
}

// writeWaiting writes st's list next to the state.
func (s *Store) writeWaiting(st *state) error {
	b, err := json.Marshal(waitingOf(st))
	if err != nil {
		return err
	}
	return s.Root.Write(s.rel(WaitingFile), append(b, '\n'), 0o600)
}

// SessionWaiting is what the launcher hands a session at its start: the
// store's list as the host last wrote it, checked to be one. A store that
// has none yet hands an empty list; one that cannot be read, a list whose
// Unknown says why.
func SessionWaiting(root safefile.Root) []byte {
	s := New(root, nil)
	w := WaitList{Items: Items{}}
	b, err := root.ReadFile(s.rel(WaitingFile), maxWaiting)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		w.Unknown = "the host could not read its list: " + err.Error()
	case json.Unmarshal(b, &w) != nil:
		w = WaitList{Items: Items{}, Unknown: "the host's list does not parse"}
	default:
		return b
	}
	out, _ := json.Marshal(w)
	return append(out, '\n')
}

// sessionWaitingFile is SessionWaitingFile (tests read another).
var sessionWaitingFile = SessionWaitingFile

// ListWaiting is hobbs review's listing. On the host it is the store's:
// the changes waiting, or with all every change held. In a session it is
// the list the launcher handed the session at its start, read-only: a
// session sees what waits, and cannot decide it.
func ListWaiting(root safefile.Root, log *audit.Logger, all bool) (Items, error) {
	if os.Getenv("HOBBS_CONTEXT") != "container" {
		return New(root, log).List(all)
	}
	if all {
		return nil, errs.Usagef("--all lists the changes already decided: on the host")
	}
	b, err := os.ReadFile(sessionWaitingFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Missingf("this session has no list of the changes waiting for review (%s)", sessionWaitingFile).
			WithHint("the owner runs hobbs review on the host")
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "the changes waiting for review")
	}
	var w WaitList
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, errs.Failf("%s does not parse: %v", sessionWaitingFile, err)
	}
	if w.Unknown != "" {
		return nil, errs.Failf("what waits for review is not known: %s", w.Unknown)
	}
	return w.Items, nil
}
