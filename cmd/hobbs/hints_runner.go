package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/runner"
)

// runnerHints are the words of a headless run's notices.
var runnerHints = map[errs.Kind]words{
	runner.TaskEnded: say("playbook {playbook}: task {task} {what} (hobbs task show {task})"),
	runner.ReviewRun: say("playbook {playbook} is supervised: review the run, then hobbs task approve {task} (or hobbs task reject {task})"),
}
