package serve

import (
	"context"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/runner"
)

// LauncherRunner carries out triggered runs with the launcher: each is a
// KindTrigger run of the playbook's approved grant (runner.CheckTrigger:
// stage supervised or autonomous, run: block approved), planned and
// executed by runner.Runner as every headless run, under the playbook's
// run lock, with the event as the session file $HOBBS_EVENT names.
type LauncherRunner struct {
	Launcher  runner.Runner
	Playbooks *playbook.Store
}

// Check reports whether playbook may run for a trigger now.
func (r LauncherRunner) Check(pb string) error {
	pol, err := r.Launcher.Policy()
	if err != nil {
		return err
	}
	_, err = runner.CheckTrigger(r.Playbooks, pb, pol)
	return err
}

// Run runs j: the policy and the playbook checked again (either may have
// changed since the delivery was queued), then the run, under the policy
// just checked.
func (r LauncherRunner) Run(ctx context.Context, j Job, event []byte) (Result, error) {
	pol, err := r.Launcher.Policy()
	if err != nil {
		return Result{}, err
	}
	grant, err := runner.CheckTrigger(r.Playbooks, j.Playbook, pol)
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = r.Playbooks.RunLocked(j.Playbook, grant.Stage, func() error {
		trig := &plan.Trigger{Name: j.Trigger, Source: j.Source, Event: event}
		if j.Source == config.TriggerIMAP {
			trig.Attachments = store{in: r.Launcher.Instance}.mailFiles(j.ID)
		}
		f, err := r.Launcher.Run(ctx, plan.KindTrigger, grant, trig, pol, j.Task)
		o := f.Outcome
		res = Result{Finished: f.Recorded, Outcome: o.Status, Why: o.Why, Report: o.Report, Review: f.Review, Denied: f.Denied}
		if c := o.Result; c != nil {
			res.CostUSD, res.Turns = c.TotalCostUSD, c.NumTurns
		}
		return err
	})
	return res, err
}
