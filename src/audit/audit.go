// Package audit writes the instance's audit log, logs/audit.log: one JSON
// object per line (time, actor, event, subject, outcome, optional detail),
// appended atomically under a lock so concurrent processes never interleave.
//
// Every line passes through Redact before it touches disk, so a token that
// slips into a subject or a detail field is replaced by "[REDACTED:kind]".
// Callers still must never log secret values on purpose: log names, not
// values. Redact is exported for every other log Hobbs writes (the proxy's
// decisions, task logs).
package audit

import (
	"encoding/json"
	"maps"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Entry is one audit record.
type Entry struct {
	Time    time.Time      `json:"time"`
	Actor   string         `json:"actor"`             // "host:<user>" or "container:<user>", see Actor
	Event   string         `json:"event"`             // dotted verb: "init", "memory.add", "vault.get", "egress.deny"
	Subject string         `json:"subject,omitempty"` // what it acted on: a path, a memory id, a secret name
	Outcome string         `json:"outcome"`           // "ok", "error", "denied", …
	Detail  map[string]any `json:"detail,omitempty"`
}

// Logger appends entries to one audit file.
type Logger struct {
	Path  string
	Root  safefile.Root // the directory Path is opened beneath (see New)
	Actor string        // defaults to Actor()
	Now   func() time.Time
	// Failed, when set, is told of each line Record could not write: the
	// command layer makes it a warning, since what was done stays done.
	Failed func(error)
}

// New returns a Logger writing to path, opened beneath root (the
// instance's safe-open layer: no link in any component below it is
// followed).
func New(root safefile.Root, path string) *Logger { return &Logger{Path: path, Root: root} }

// Log appends e, filling Time and Actor when empty. The log's directory must
// exist; the file is created 0600.
func (l *Logger) Log(e Entry) error {
	if l == nil || l.Path == "" {
		return nil
	}
	if e.Time.IsZero() {
		if l.Now != nil {
			e.Time = l.Now()
		} else {
			e.Time = time.Now()
		}
	}
	e.Time = e.Time.UTC()
	if e.Actor == "" {
		e.Actor = l.Actor
		if e.Actor == "" {
			e.Actor = Actor()
		}
	}
	if e.Outcome == "" {
		e.Outcome = "ok"
	}
	line, err := MarshalLine(e)
	if err != nil {
		return err
	}
	if l.Root.Dir() == "" {
		return safefile.Append(l.Path, line, 0o600)
	}
	return l.Root.Append(l.Path, line, 0o600)
}

// Record logs the event e of an operation that ended with err: outcome "ok"
// (or e.Outcome when set) without an error; "error", with the error's first
// line in detail["error"], with one. A nil l records nothing. A line that
// cannot be written goes to l.Failed, not to the caller: domain packages
// record what they did and go on.
func (l *Logger) Record(e Entry, err error) {
	if l == nil {
		return
	}
	if err != nil {
		e.Outcome = "error"
		d := make(map[string]any, len(e.Detail)+1)
		maps.Copy(d, e.Detail)
		d["error"], _, _ = strings.Cut(err.Error(), "\n")
		e.Detail = d
	}
	if werr := l.Log(e); werr != nil && l.Failed != nil {
		l.Failed(werr)
	}
}

// MarshalLine encodes v as one redacted JSON line ending in "\n".
func MarshalLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte(Redact(string(b))), '\n'), nil
}

// Actor names who is acting: "container:<user>" when HOBBS_CONTEXT=container
// (set in the image), else "host:<user>".
func Actor() string {
	where := "host"
	if os.Getenv("HOBBS_CONTEXT") == "container" {
		where = "container"
	}
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "unknown"
	}
	return where + ":" + name
}
