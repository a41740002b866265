package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Layered sessions (src/layer). A session that writes the shares through
// private layers changes nothing in effect while it runs: its changes are
// exactly its layers' upper parts, so its end needs no comparison of the
// shares with the baseline and no time window: EndLayer decides the
// session's taint from its own proxy's record alone, then has the caller
// merge (untainted) or not (tainted), holds what the caller hands back for
// review and records what the merge put in effect as the baseline.

// LayerChange is one change of a session's layer to hold for review.
type LayerChange struct {
	// Path is where it would be in effect, slash-separated, relative to
	// the instance ("memory/active/x.md").
	Path string
	// From is the file holding the session's version, relative to the
	// instance (in the layer); "" for a removal.
	From string
	// Base is the hash of what the session started from ("" for none).
	Base string
	// BaseData is the content Base names (kept for review show).
	BaseData []byte
	// Why, for a change the merge could not take: the conflict.
	Why string
	// Entry, when From is an entry Hobbs did not copy as text (a file
	// over the caps, moved there whole), names it ("large:SIZE:CTIME"):
	// it is held as such, never read, and can be rejected, not approved.
	Entry string
	// Workspace, for an instruction file of the session's workspace, is
	// the workspace (absolute); Path is then relative to it.
	Workspace string
	// Volume, for a file of the Claude Code user scope, is the state
	// volume; Path is then relative to the scope's directory.
	Volume string
}

// LayerMerge is the caller's merge of a session's layers: tainted says
// whether the session may change what is in effect; stamp is the host's
// record of the session, which each memory the merge changes carries in
// its provenance field (memory.Stamp). It returns the paths (relative to
// the instance) it changed in effect and the changes to hold.
type LayerMerge func(tainted bool, stamp string) (kept []string, hold []LayerChange, problems []string)

// BeginLayer is Begin for a session whose writes go to private layers.
func (s *Store) BeginLayer(name string, origin Origin, owner string, auditFrom int64, alive func(owner string) bool) error {
	if err := s.Begin(name, origin, owner, auditFrom, alive); err != nil {
		return err
	}
	return s.lockedFrom(nil, false, func(st *state) error {
		if o := st.Open[name]; o != nil {
			o.Layered = true
		}
		return nil
	})
}

// EndLayer records the end of the layered session name: its taint from
// reads and trusted (its own proxy's record, complete once the proxy has
// stopped), then merge, then holds what merge hands back.
func (s *Store) EndLayer(name string, reads Reads, trusted func(host string) bool, merge LayerMerge) (Result, error) {
	return s.EndLayerScope(name, reads, trusted, ScopeEnd{}, merge)
}

// EndLayerScope is EndLayer for a session that mounted the state volume:
// scope says which conversation transcripts it wrote; writing one a
// tainted session wrote (resuming its conversation) taints it, and a
// tainted session's transcripts are recorded as tainted.
func (s *Store) EndLayerScope(name string, reads Reads, trusted func(host string) bool, scope ScopeEnd, merge LayerMerge) (Result, error) {
	var res Result
	err := s.lockedFrom(nil, false, func(st *state) error {
		ses := st.Open[name]
		if ses == nil {
			return errs.Failf("provenance: session %s has no record of its start", name)
		}
		taint(ses, reads, trusted)
		resumed(st, ses, scope)
		var err error
		res, err = s.endLayer(st, ses, scope, merge)
		return err
	})
	return res, err
}

// LeftWhy is why a layer a session left when its launcher died is held
// whole: what the session read is not known.
const LeftWhy = "its launcher stopped before it recorded the session's end"

// KeptWhy is why a layer is held whole that its session's end kept, for
// it could neither merge nor hold all of it (Result.Unheld, a merge that
// failed): part of it may have taken effect, the rest waits for review.
const KeptWhy = "its end could not merge or hold all of its changes"

// HoldLeft holds whole the layers session name left when its launcher
// died (merge is called tainted: it hands every change back to hold).
// What the session read is not known, so it counts as tainted whatever
// its record says. Its record is ended here. One that an earlier start
// already ended (Begin ends the records of dead launchers' sessions) is
// made anew, to name the session in what is held; so is one when the
// record open under the name is a later session's, whose launcher alive
// says runs (it took the name of the dead one), which stays open. why is
// why they are held (LeftWhy, KeptWhy).
func (s *Store) HoldLeft(name, why string, alive func(owner string) bool, merge LayerMerge) (Result, error) {
	var res Result
	err := s.lockedFrom(nil, false, func(st *state) error {
		ses := st.Open[name]
		if ses == nil || alive != nil && ses.Owner != "" && alive(ses.Owner) {
			ses = &Session{Name: name, Layered: true, Started: s.now()}
		}
		ses.Tainted = true
		ses.Why = appendOnce(ses.Why, why)
		var err error
		res, err = s.endLayer(st, ses, ScopeEnd{}, merge)
		return err
	})
	return res, err
}

// endLayer has merge merge (untainted) or hand back (tainted) the layers
// of ses, holds what it hands back and ends ses's record.
func (s *Store) endLayer(st *state, ses *Session, scope ScopeEnd, merge LayerMerge) (Result, error) {
	var res Result
	kept, hold, problems := merge(ses.Tainted, record([]Session{*ses}))
	if ses.Tainted {
		if st.Transcripts == nil {
			st.Transcripts = map[string]string{}
		}
		for _, t := range scope.Wrote {
			if _, ok := st.Transcripts[t]; !ok {
				st.Transcripts[t] = ses.Name
			}
		}
	}
	res.Problems = problems
	ses.Ended = s.now()
	if st.Open[ses.Name] == ses {
		delete(st.Open, ses.Name)
	}
	live := []Session{*ses}
	// What the merge put in effect is not written into the baseline
	// here (a rewrite of every file's entry at each end): the next
	// start with no session open reads it as it reads your own edits,
	// and an approval checks the file in effect itself (unchangedSince).
	res.Kept = len(kept)
	for _, c := range hold {
		it, err := s.holdLayer(st, c, live)
		if err != nil {
			res.Problems = append(res.Problems, err.Error())
			res.Unheld = append(res.Unheld, c)
			continue
		}
		st.Items = append(st.Items, it)
		res.Held = append(res.Held, it)
	}
	res.Session = *ses
	for _, it := range st.Items {
		if it.Status == Waiting {
			res.Waiting++
		}
	}
	outcome := "ok"
	if ses.Tainted {
		outcome = "tainted"
	}
	s.Audit.Record(audit.Entry{Event: "provenance.session", Subject: ses.Name, Outcome: outcome,
		Detail: map[string]any{"origin": ses.Origin.String(), "why": ses.Why, "read": ses.Read, "kept": res.Kept,
			"held": len(res.Held), "problems": res.Problems, "layered": true}}, nil)
	return res, s.Root.Append(s.rel("sessions.jsonl"), mustLine(ses), 0o600)
}

// holdLayer holds one change of a layer through hold: the session's file
// (in the layer) goes into the store; what is in effect is not touched
// (the session never changed it).
func (s *Store) holdLayer(st *state, c LayerChange, live []Session) (*Item, error) {
	var a fileState
	has := c.From != ""
	src := c.From
	if has && c.Entry != "" {
		a.Hash = c.Entry
	} else if has {
		b, err := s.Root.ReadFile(c.From, maxFile)
		var tooLarge *safefile.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			// Held as an entry, moved from the layer (holdCopy): it can
			// be rejected, not approved.
			fi, err := s.Root.Lstat(c.From)
			if err != nil {
				return nil, errs.Wrap(errs.Failure, err, "hold %s for review", c.Path)
			}
			a = statOf(fi)
			a.Hash = fmt.Sprintf("large:%d:%d", tooLarge.Size, a.Ctime)
		case err != nil:
			return nil, errs.Wrap(errs.Failure, err, "hold %s for review", c.Path)
		default:
			sum := sha256.Sum256(b)
			a.Hash = hex.EncodeToString(sum[:])
			// Its mode, for hold to keep whether its owner may run it (a
			// script): nothing in the layer changes once the session ended.
			if fi, err := s.Root.Lstat(c.From); err == nil {
				a.Mode = uint32(fi.Mode().Perm())
			}
		}
	} else {
		// A removal: nothing to keep; hold touches no file of a removal it
		// did not have.
		src = path.Join(Dir, "layer-removal", c.Path)
	}
	it, err := s.hold(st, src, fileState{}, false, has, a, live)
	if err != nil {
		return nil, err
	}
	it.Path, it.Before, it.Workspace, it.Volume = c.Path, c.Base, c.Workspace, c.Volume
	if c.Base != "" && c.BaseData != nil {
		// The content before is kept in the objects, which a lazy state
		// would not save.
		if err := s.decode(st); err != nil {
			return nil, err
		}
		if err := st.pack.put(c.Base, c.BaseData); err != nil {
			return nil, err
		}
	}
	it.Kind, _ = Watched(c.Path)
	switch {
	case c.Volume != "":
		it.Kind = UserScopeKind
	case c.Workspace != "":
		it.Kind = "workspace"
	case it.Kind == "":
		it.Kind, _, _ = cutShare(c.Path)
	}
	switch {
	case c.Base != "" && has:
		it.Change = "changed"
	case c.Base != "":
		it.Change = "removed"
	default:
		it.Change = "created"
	}
	return it, nil
}

func cutShare(p string) (string, string, bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

// checkWorkspace checks a held instruction file of a workspace before an
// approval writes it: the file there is still what it was held against
// (else the workspace changed since: review that first), and the held copy
// is still the text that was held. It returns that text (nil: a removal).
func (s *Store) checkWorkspace(it *Item) ([]byte, error) {
	ws := safefile.Beneath(it.Workspace)
	cur, err := ws.ReadFile(it.Path, maxFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cur = nil
	case err != nil:
		return nil, err
	}
	if (cur == nil) != (it.Before == "") || cur != nil && hashOf(cur) != it.Before {
		return nil, &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s: %s changed in the workspace since this change was held", it.ID, it.Path),
			Advice: errs.NewAdvice(LaterChange, "id", it.ID)}
	}
	if it.After == "" {
		return nil, nil
	}
	return s.heldText(it)
}

// writeWorkspace puts e at the instruction file p of the workspace ws
// (e not existing: removes the file).
func writeWorkspace(ws safefile.Root, p string, e effect) error {
	if !e.exists {
		if err := ws.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := ws.MkdirAll(filepath.Join(ws.Dir(), filepath.Dir(p)), 0o755); err != nil {
		return err
	}
	return ws.Write(p, e.text, layer.Perm(e.exec))
}

// Opened reports whether session name's record is open, and the launcher
// it names, as the store was last saved (read without its lock).
func (s *Store) Opened(name string) (open bool, owner string, err error) {
	st, err := s.readItems()
	if err != nil {
		return false, "", err
	}
	if o := st.Open[name]; o != nil {
		return true, o.Owner, nil
	}
	return false, "", nil
}
