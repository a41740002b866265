package playbook

import (
	"errors"
	"io/fs"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// Removed is the result of Remove.
type Removed struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Approval: its run: block's approval was removed too.
	Approval bool `json:"approval_removed"`
}

// Remove deletes playbook name, whether or not its file parses, and on
// the host its approval (a playbook made again under the name starts
// unapproved). Its runs' task records stay. The audit event is
// playbook.rm.
func (s *Store) Remove(name string) (Removed, error) {
	r, err := s.remove(name)
	s.Audit.Record(audit.Entry{Event: "playbook.rm", Subject: name, Detail: map[string]any{"approval_removed": r.Approval}}, err)
	return r, err
}

func (s *Store) remove(name string) (Removed, error) {
	r := Removed{Name: name, Path: s.Path(name)}
	if err := checkName(name); err != nil {
		return r, err
	}
	unlock, err := s.lock()
	if err != nil {
		return r, err
	}
	defer unlock()
	if _, err := s.fs().Lstat(r.Path); errors.Is(err, fs.ErrNotExist) {
		return r, errs.Failf("no playbook %q (%s)", name, r.Path).Advise(NoPlaybook)
	}
	if err := s.fs().Remove(r.Path); err != nil {
		return r, errs.Wrap(errs.Failure, err, "remove playbook %s", name)
	}
	if s.In.Root == "" || instance.InContainer() {
		return r, nil
	}
	root := s.In.FS()
	if !root.Exists(s.In.Grants()) {
		return r, nil
	}
	unlockGrants, err := root.Lock(s.In.Lock("grants"), 30*time.Second)
	if err != nil {
		return r, errs.Wrap(errs.Failure, err, "lock the approvals")
	}
	defer unlockGrants()
	if err := root.Remove(grantPath(s.In, name)); err == nil {
		r.Approval = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r, errs.Wrap(errs.Failure, err, "remove the approval of %s", name)
	}
	return r, nil
}
