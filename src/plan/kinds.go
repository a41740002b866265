package plan

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice the plan's errors carry (worded in cmd/hobbs).
const (
	InvalidName        errs.Kind = "plan.invalid-name"        // a session name the engine's objects cannot take
	ReservedSecret     errs.Kind = "plan.reserved-secret"     // config.yaml env: maps a variable the launcher sets
	UnknownSecret      errs.Kind = "plan.unknown-secret"      // a run: block names a secret config.yaml lacks
	BadBinding         errs.Kind = "plan.bad-binding"         // a secrets: binding's hosts or positions
	TriggerNoRun       errs.Kind = "plan.trigger-no-run"      // a triggered run of a playbook without a run: block: {playbook}
	UnsafeSource       errs.Kind = "plan.unsafe-source"       // a bind source that failed its check: {dir}
	MissingRoot        errs.Kind = "plan.missing-root"        // the instance root or the workspace is missing
	WorkspaceOverlap   errs.Kind = "plan.workspace-overlap"   // the workspace holds the instance or lies in it
	SensitiveWorkspace errs.Kind = "plan.sensitive-workspace" // the workspace is a system, home or hidden directory
)
