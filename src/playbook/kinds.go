package playbook

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice playbook's errors carry; cmd/hobbs words them
// (hints_playbook.go). Facts: name (the playbook), stage and next (stages),
// stages (the ladder, joined), sections (the sections, joined).
const (
	BadName                errs.Kind = "playbook.bad-name"
	BadStage               errs.Kind = "playbook.bad-stage"
	StageLadder            errs.Kind = "playbook.stage-ladder"
	NoPlaybook             errs.Kind = "playbook.no-playbook"
	Unparsable             errs.Kind = "playbook.unparsable"
	NewFailsLint           errs.Kind = "playbook.new-fails-lint"
	Exists                 errs.Kind = "playbook.exists"
	StageInSource          errs.Kind = "playbook.stage-in-source"
	LacksSections          errs.Kind = "playbook.lacks-sections"
	ApproveAgain           errs.Kind = "playbook.approve-again"
	NoReason               errs.Kind = "playbook.no-reason"
	StageJump              errs.Kind = "playbook.stage-jump"
	BadHost                errs.Kind = "playbook.bad-host"
	AutonomousNoRun        errs.Kind = "playbook.autonomous-no-run"
	AssistedNotHeadless    errs.Kind = "playbook.assisted-not-headless"
	ManualNotHeadless      errs.Kind = "playbook.manual-not-headless"
	SupervisedNotScheduled errs.Kind = "playbook.supervised-not-scheduled"
	ClimbTheLadder         errs.Kind = "playbook.climb-the-ladder"
	AlreadyRunning         errs.Kind = "playbook.already-running"
	BadGrant               errs.Kind = "playbook.bad-grant"
	ChangedSinceApproval   errs.Kind = "playbook.changed-since-approval"
	NotApproved            errs.Kind = "playbook.not-approved"
	ApprovedBlockOnly      errs.Kind = "playbook.approved-block-only"
	ScheduledRunRefused    errs.Kind = "playbook.scheduled-run-refused"
	NoRunBlock             errs.Kind = "playbook.no-run-block"
)

// LintProblems is the advice of doctor's playbooks check for playbooks that
// fail lint; cmd/hobbs words it (hints_doctor.go).
const LintProblems errs.Kind = "playbook.lint-problems"
