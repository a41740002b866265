package playbook

import (
	"io"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// RunCheck is what PrepareRun found: the run's allowance and, for a run: block,
// whether it is approved.
type RunCheck struct {
	Spec Allowance
	Run  *Run // the run: block as the file has it; nil without one
	Doc  *Doc // the playbook as read: what an approval approves
	// Unapproved is why the playbook may not run yet (CheckGrant: its text
	// or what it names changed since the approval), nil when it may or it
	// has no run: block.
	Unapproved error
}

// PrepareRun checks that playbook name may run headless now — its stage,
// for a schedule's run (scheduled) that it is still autonomous — and
// computes its allowance under the instance's effective policy pol. A refusal
// is audited (playbook.run, refused) unless the caller only looks (dry
// run, plan).
func (s *Store) PrepareRun(name string, pol *policy.Policy, scheduled, look bool) (RunCheck, error) {
	d, _, err := s.Get(name)
	if err != nil {
		return RunCheck{}, err
	}
	spec, err := ComputeAllowance(name, d.Path, d.Meta, pol)
	if err == nil && scheduled {
		if err = CanSchedule(name, d.Meta); err != nil {
			err = errs.Usagef("%v; this scheduled run is refused", err).
				Advise(ScheduledRunRefused, "name", name)
		}
	}
	if err != nil {
		if !look {
			s.refused(name, map[string]any{"stage": d.Meta.Stage})
		}
		return RunCheck{}, err
	}
	c := RunCheck{Spec: spec, Run: d.Meta.Run, Doc: d}
	if spec.Declared && s.In.Root != "" {
		c.Spec.Assets, c.Unapproved = CheckedAssets(s.In, name, d)
		c.Spec.Text = append([]byte(nil), d.raw...)
	}
	return c, nil
}

// refused audits a headless run of name refused before it started.
func (s *Store) refused(name string, detail map[string]any) {
	s.Audit.Record(audit.Entry{Event: "playbook.run", Subject: name, Outcome: "refused", Detail: detail}, nil)
}

// Refuse audits a run of name refused for why (an unapproved block, the
// user's no) and returns err.
func (s *Store) Refuse(name, why string, err error) error {
	s.refused(name, map[string]any{"reason": why})
	return err
}

// RunLocked takes the run lock of playbook name (LockRun), runs run with
// it held and audits the run's end (playbook.run with its outcome; a run
// refused by the lock as refused).
func (s *Store) RunLocked(name, stage string, run func() error) error {
	unlock, err := LockRun(s.Root, s.In.Lock(RunLockName(name)), name)
	if err != nil {
		return s.Refuse(name, "already running", err)
	}
	defer unlock()
	err = run()
	s.Audit.Record(audit.Entry{Event: "playbook.run", Subject: name, Outcome: "ok", Detail: map[string]any{"stage": stage}}, err)
	return err
}

// ApproveRuns approves playbook name for its headless runs as it is now —
// the bytes read, under the playbooks lock, and the skills and sub-agents
// they name (Approve) — and returns the grant and what a run gets under
// the instance's effective policy pol. A playbook without a run: block has
// nothing to approve; one that may not run headless is refused.
func (s *Store) ApproveRuns(name string, pol *policy.Policy) (*Grant, Allowance, error) {
	if err := checkName(name); err != nil {
		return nil, Allowance{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, Allowance{}, err
	}
	defer unlock()
	d, _, err := s.Get(name)
	if err != nil {
		return nil, Allowance{}, err
	}
	if d.Meta.Run == nil {
		return nil, Allowance{}, errs.Usagef("%s has no run: block to approve", name).
			Advise(NoRunBlock, "name", name)
	}
	spec, err := ComputeAllowance(name, d.Path, d.Meta, pol)
	if err != nil {
		return nil, Allowance{}, err
	}
	g, err := Approve(s.In, name, d, s.now(), s.Audit)
	return g, spec, err
}

// Diff prints what changed in playbook name since its approval (WriteDiff)
// and reports whether anything did.
func (s *Store) Diff(w io.Writer, name string) (bool, error) {
	if instance.InContainer() {
		return false, errs.Usagef("hobbs playbook approve runs on the host, not in the agent's container: approvals live in grants/, which no session mounts")
	}
	d, _, err := s.Get(name)
	if err != nil {
		return false, err
	}
	return WriteDiff(w, s.In, name, d)
}

// ApproveChecked approves c's playbook as PrepareRun read it (the prompt
// of a run on a terminal): the bytes it checked, not the file again. It
// returns the files of the skills and sub-agents approved with it, as
// the approval read them: what the run is handed (Allowance.Assets).
func (s *Store) ApproveChecked(name string, c RunCheck) ([]AssetFile, error) {
	g, err := Approve(s.In, name, c.Doc, s.now(), s.Audit)
	if err != nil {
		return nil, err
	}
	if g.files == nil {
		return []AssetFile{}, nil
	}
	return g.files, nil
}
