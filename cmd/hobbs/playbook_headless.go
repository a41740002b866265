package main

import (
	"context"
	"io/fs"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/runner"
)

// playbookKind is the kind of a headless run: scheduled or by hand.
func playbookKind(scheduled bool) plan.Kind {
	if scheduled {
		return plan.KindScheduled
	}
	return plan.KindPlaybook
}

// headlessRunner runs in's headless runs (an error: no engine, or no config).
func (a *app) headlessRunner(in instance.Instance) (runner.Runner, error) {
	e, cfg, err := a.engine(in)
	def, _ := fs.ReadFile(hobbs.Dist, "policy.yaml")
	return runner.Runner{Instance: in, Config: cfg, Engine: e, Assets: hobbs.Assets, DefaultPolicy: def, Audit: a.audit(in),
		Remember: rememberLessons(a, in), Words: adviceText, Passphrase: passphrase, Status: a.status, Stdout: a.out, Stderr: a.errOut}, err
}

// planPlaybookRun is the plan of a headless run of the grant spec.
func (a *app) planPlaybookRun(in instance.Instance, spec playbook.Allowance, scheduled bool) (*plan.Plan, error) {
	r, err := a.headlessRunner(in)
	if r.Config == nil {
		return nil, err
	}
	return r.Plan(playbookKind(scheduled), spec, nil, nil, true)
}

// runPlaybookHeadless runs the playbook spec grants headless, as a task.
func (a *app) runPlaybookHeadless(ctx context.Context, in instance.Instance, spec playbook.Allowance, scheduled bool) error {
	r, err := a.headlessRunner(in)
	if err != nil {
		return err
	}
	f, err := r.Run(ctx, playbookKind(scheduled), spec, nil, nil, "")
	if err == nil && f.Code != 0 {
		return exitStatus(f.Code)
	}
	return err
}
