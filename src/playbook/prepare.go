package playbook

import (
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// RunCheck is what PrepareRun found: the run's grant and, for a run: block,
// whether it is approved.
type RunCheck struct {
	Spec RunSpec
	Run  *Run // the run: block as the file has it; nil without one
	// Unapproved is why the run: block may not run yet (CheckGrant), nil
	// when it may or there is none.
	Unapproved error
}

// PrepareRun checks that playbook name may run headless now — its stage,
// for a schedule's run (scheduled) that it is still autonomous — and
// computes its grant under the instance's effective policy pol. A refusal
// is audited (playbook.run, refused) unless the caller only looks (dry
// run, plan).
func (s *Store) PrepareRun(name string, pol *egress.Policy, scheduled, look bool) (RunCheck, error) {
	d, _, err := s.Get(name)
	if err != nil {
		return RunCheck{}, err
	}
	spec, err := ComputeRunSpec(name, d.Path, d.Meta, pol)
	if err == nil && scheduled {
		if err = CanSchedule(name, d.Meta); err != nil {
			err = errs.Usagef("%v; this scheduled run is refused", err).
				WithHint("remove the schedule (hobbs schedule rm %s), or move the playbook back to autonomous", name)
		}
	}
	if err != nil {
		if !look {
			s.refused(name, map[string]any{"stage": d.Meta.Stage})
		}
		return RunCheck{}, err
	}
	c := RunCheck{Spec: spec, Run: d.Meta.Run}
	if spec.Declared && s.In.Root != "" {
		c.Unapproved = CheckGrant(s.In, name, d.Meta.Run)
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
