package main

import (
	"context"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/task"
)

// playbookKind is the kind of a headless run: scheduled or by hand.
func playbookKind(scheduled bool) launcher.Kind {
	if scheduled {
		return launcher.KindScheduled
	}
	return launcher.KindPlaybook
}

// planPlaybookRun is the plan of a headless run of the playbook spec
// grants (launcher.NewPlan): its own policy, secrets, tools and limits.
func (a *app) planPlaybookRun(spec playbook.RunSpec, scheduled, planOnly bool) (*launcher.Plan, error) {
	p, _, _, err := a.planRun(runOptions{}, playbookKind(scheduled), &spec, planOnly)
	return p, err
}

// runPlaybookHeadless plans a headless run of the playbook spec grants and
// carries it out as a task (launcher.Headless).
func (a *app) runPlaybookHeadless(ctx context.Context, in instance.Instance, spec playbook.RunSpec, scheduled bool) error {
	p, _, e, err := a.planRun(runOptions{}, playbookKind(scheduled), &spec, false)
	if err != nil {
		return err
	}
	h := launcher.Headless{Plan: p, Grant: spec, Runtime: a.runtime(in, e, runOptions{}),
		Tasks: task.Open(in, a.audit(in)), Remember: rememberLessons(a, in), Status: a.status}
	code, err := h.Run(ctx)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}
