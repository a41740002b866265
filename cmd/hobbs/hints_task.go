package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/task"
)

// taskHints are the words of the task log's advice (src/task/kinds.go).
var taskHints = map[errs.Kind]words{
	task.BadID:       say("ids look like task_20261122_001 (hobbs task list)"),
	task.BadPlaybook: say("hobbs playbook list shows them"),
	task.NoTask:      say("hobbs task list shows the task ids"),
	task.NoLessons:   say("add a section like:\n## Lessons\n- Check the bank's CSV date format first."),
	task.LessonsLeft: say("add it and the lessons after it with: hobbs memory add TEXT --type lesson --tag task --source {source}"),
}
