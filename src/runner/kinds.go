package runner

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of a headless run's notices: status lines as data, worded in
// cmd/hobbs as advice is (Runner.Words).
const (
	TaskEnded errs.Kind = "runner.task-ended" // playbook {playbook}'s task {task} ended: {what}
	ReviewRun errs.Kind = "runner.review-run" // a supervised run's task {task} waits for review
)
