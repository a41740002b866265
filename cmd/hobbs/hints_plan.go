package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// planHints are the words of the plan's advice: a run's spec, its secrets,
// its workspace and the sources it mounts.
var planHints = map[errs.Kind]words{
	plan.InvalidName:    say("use 1-40 of a-z 0-9 . _ - starting with a letter or digit (not ending in -proxy)"),
	plan.ReservedSecret: say("choose another variable name in config.yaml env"),
	plan.UnknownSecret:  say("add it to config.yaml, or remove it from the playbook's run.secrets"),
	plan.BadBinding: say("hosts take the forms of policy.yaml domains: api.github.com, *.example.com, host:8443; " +
		"in: header, path, query, body (docs/vault.md)"),
	plan.TriggerNoRun: say("declare what a run needs under run: (docs/playbooks.md), then hobbs playbook approve {playbook}"),
	plan.UnsafeSource: say("an agent session may have planted it: inspect it (ls -la {dir}), move it aside, " +
		"then run hobbs init to recreate what is missing"),
	plan.MissingRoot: say("run hobbs init, or create the directory"),
	plan.WorkspaceOverlap: say("use a workspace directory outside the instance that does not contain it " +
		"(hobbs run --workspace DIR, or workspace in config.yaml)"),
	plan.SensitiveWorkspace: say("use a directory of its own for the agent's work, e.g. hobbs run --workspace ~/hobbs-workspace"),
}
