package provenance

import (
	"errors"
	"path"
	"strings"

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
	// Exec: the file is written runnable by its owner (the session's
	// was).
	Exec bool
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
			out = append(out, ScopeWrite{ID: it.ID, Path: it.Path, Before: it.Before, Text: b, Exec: it.Exec})
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

// ScopeEnd is what a session's end found on the state volume, and how its
// Claude Code was started.
type ScopeEnd struct {
	// Wrote are the transcripts (paths relative to the state volume's
	// directory) the session created or changed (in content: a rewrite
	// of the same size counts).
	Wrote []string
	// Unknown, when not nil, is why the volume could not be read at the
	// end: the session may have resumed a tainted conversation.
	Unknown error
	// Command is the session's command line as the launcher started it
	// (plan.Claude.Command): a resume or fork it asks Claude Code for is
	// read from it (Resume).
	Command []string
	// Transcripts are the transcripts on the volume at the session's
	// start (paths as Wrote's).
	Transcripts []string
}

// Resume is what a Claude Code command line asks of earlier
// conversations (https://code.claude.com/docs/en/cli-reference,
// https://code.claude.com/docs/en/sessions).
type Resume struct {
	// ID is --resume's (-r) value: a session id, or a name or search term
	// Claude Code looks up; "" with Picker.
	ID string
	// Picker: --resume without a value (Claude Code asks which).
	Picker bool
	// Continue: --continue (-c), the most recent conversation of the
	// working directory.
	Continue bool
	// FromPR: --from-pr, the conversation linked to a pull request.
	FromPR bool
	// Fork: --fork-session, the resumed conversation copied into a new
	// one (a new transcript file), the old one left as it was.
	Fork bool
}

// Resumes reads what cmd asks of earlier conversations when cmd runs
// claude; the zero Resume for anything else (a shell, whose claude, if
// any, is not known).
func Resumes(cmd []string) Resume {
	var r Resume
	if len(cmd) == 0 || path.Base(cmd[0]) != "claude" {
		return r
	}
	args := cmd[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		next := func() string {
			if hasValue {
				return value
			}
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "-r", "--resume":
			if r.ID = next(); r.ID == "" {
				r.Picker = true
			}
		case "-c", "--continue":
			r.Continue = true
		case "--from-pr":
			r.FromPR = true
			next()
		case "--fork-session":
			r.Fork = true
		}
	}
	return r
}

// resumed taints ses when it wrote a transcript a tainted session wrote
// (a resumed conversation appends to its transcript), when its command
// resumes or forks a tainted conversation by its id, when it forks one it
// does not name while a tainted conversation is on the volume (a fork
// writes a new transcript: which it copied is not known), or when what it
// wrote is not known.
func resumed(st *state, ses *Session, scope ScopeEnd) {
	taintBy := func(why string) {
		ses.Tainted = true
		ses.Why = appendOnce(ses.Why, why)
	}
	if scope.Unknown != nil {
		taintBy("the conversations it wrote are not known: " + scope.Unknown.Error())
	}
	for _, t := range scope.Wrote {
		if _, ok := st.Transcripts[t]; ok {
			taintBy("resumed tainted conversation " + t)
		}
	}
	r := Resumes(scope.Command)
	named := false
	if r.ID != "" {
		for _, t := range scope.Transcripts {
			if path.Base(t) != r.ID+".jsonl" {
				continue
			}
			named = true
			if _, ok := st.Transcripts[t]; ok {
				taintBy("resumed tainted conversation " + t)
			}
		}
	}
	if r.Fork && !named && len(st.Transcripts) > 0 {
		for _, t := range scope.Transcripts {
			if _, ok := st.Transcripts[t]; ok {
				taintBy("forked a conversation it does not name by id while tainted conversations are kept (" + t + ")")
				break
			}
		}
	}
}
