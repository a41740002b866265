package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/playbook"
)

// playbookHints words the advice of package playbook.
var playbookHints = map[errs.Kind]words{
	playbook.BadName:       say("names are kebab-case: lower-case letters and digits joined by hyphens, at most 64 characters (e.g. weekly-invoices)"),
	playbook.BadStage:      say("stages: {stages}"),
	playbook.StageLadder:   say("stages, in order: {stages}"),
	playbook.NoPlaybook:    say("see the playbooks with: hobbs playbook list"),
	playbook.Unparsable:    say("fix the file by hand (it was not changed); check with: hobbs playbook lint"),
	playbook.NewFailsLint:  say("include every section: {sections}"),
	playbook.Exists:        say("choose another name, or change it with: hobbs playbook show {name}"),
	playbook.StageInSource: say("change the stage with: hobbs playbook stage {name} {stage} --reason \"…\""),
	playbook.LacksSections: say("every playbook has the sections {sections} (## headings; they may be empty)"),
	playbook.ApproveAgain:  say("approve it: hobbs playbook approve {name}"),
	playbook.NoReason:      say("add --reason \"why the playbook moves\""),
	playbook.StageJump:     say("move up one stage at a time (next: {next}); each stage should prove itself before the next"),
	playbook.BadHost:       say("hosts are egress policy domains entries: api.example.com, *.example.com, example.com:8443"),
	playbook.AutonomousNoRun: say("declare what a run needs under run: (hosts, secrets, tools, max_turns, timeout; docs/playbooks.md), " +
		"or step it back: hobbs playbook stage {name} supervised --reason \"…\""),
	playbook.AssistedNotHeadless: say("carry it out with Hobbs in a session (hobbs run); " +
		"when Hobbs can act and you only approve: hobbs playbook stage {name} {next} --reason \"…\""),
	playbook.ManualNotHeadless: say("follow it yourself, with Hobbs in a session (hobbs run); " +
		"when Hobbs can prepare it for you: hobbs playbook stage {name} {next} --reason \"…\""),
	playbook.SupervisedNotScheduled: say("run it by hand and review each run (hobbs playbook run {name}); " +
		"when its runs need no review: hobbs playbook stage {name} autonomous --reason \"…\""),
	playbook.ClimbTheLadder:       say("a playbook climbs manual → assisted → supervised → autonomous one stage at a time (hobbs playbook stage)"),
	playbook.AlreadyRunning:       say("wait for the run to end (hobbs task list shows it), then try again"),
	playbook.BadGrant:             say("remove it, then approve the playbook again: hobbs playbook approve {name}"),
	playbook.ChangedSinceApproval: say("see what changed: hobbs playbook approve {name} --diff; then approve it: hobbs playbook approve {name}"),
	playbook.NotApproved:          say("review it (hobbs playbook show {name}; hobbs playbook run {name} --dry-run), then: hobbs playbook approve {name}"),
	playbook.ApprovedBlockOnly:    say("review it (hobbs playbook show {name}), then: hobbs playbook approve {name}"),
	playbook.ScheduledRunRefused:  say("remove the schedule (hobbs schedule rm {name}), or move the playbook back to autonomous"),
	playbook.NoRunBlock:           say("declare what a run needs under run: (docs/playbooks.md), or hobbs playbook allow {name} HOST"),
}
