package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// deferredDir holds the run: block changes Always answers leave for the
// run's end (its name is no session's: sessions start with a letter or
// digit).
const deferredDir = ".deferred"

// deferred is one run: block change waiting for its run's end.
type deferred struct {
	Session  string `json:"session"`
	Question string `json:"question"`
	Playbook string `json:"playbook"`
	Host     string `json:"host"` // as a policy entry writes it
}

// defer_ records that q's host goes into its playbook's run: block when
// its run ends; the caller holds the lock.
func (d Dir) defer_(q Question) error {
	if err := d.Root.MkdirAll(deferredDir, 0o700); err != nil {
		return err
	}
	b, _ := json.Marshal(deferred{Session: q.Session, Question: q.ID, Playbook: q.Playbook, Host: q.Target()})
	return d.Root.Write(deferredDir+"/"+q.Session+"."+q.ID+".json", b, 0o600)
}

// ApplyDeferred carries out the run: block changes Always answers left for
// session's end: allow(playbook, host, reason) for each (the runner passes
// playbook.Store.AllowHost, which renews the playbook's approval and
// audits it). Each record is removed once carried out, or once it failed
// (the error says which host was not added, and the owner can add it with
// hobbs playbook allow).
func ApplyDeferred(d Dir, session string, allow func(playbook, host, reason string) error) []error {
	if !sessionRe.MatchString(session) || !d.Root.Exists(deferredDir) {
		return nil // nothing deferred (the common case: no lock, nothing created)
	}
	unlock, err := d.Lock()
	if err != nil {
		return []error{err}
	}
	defer unlock()
	ents, err := d.Root.ReadDir(deferredDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{err}
	}
	var problems []error
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), session+".")
		if !ok || !strings.HasSuffix(rest, ".json") || !ValidID(strings.TrimSuffix(rest, ".json")) {
			continue
		}
		name := deferredDir + "/" + e.Name()
		b, err := d.Root.ReadFile(name, maxFile)
		var r deferred
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil && r.Session != session {
			err = fmt.Errorf("names session %q", r.Session)
		}
		if err == nil {
			err = allow(r.Playbook, r.Host, "allowed when a run asked (question "+r.Question+")")
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", name, err))
		}
		d.Root.Remove(name)
	}
	return problems
}
