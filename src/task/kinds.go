package task

import "github.com/hobbs-agent/hobbs/src/errs"

// The situations the task log's errors advise on; the command layer words
// them (cmd/hobbs/hints_task.go).
const (
	BadID       errs.Kind = "task.bad-id"       // a task id of the wrong shape
	BadPlaybook errs.Kind = "task.bad-playbook" // a playbook name that is invalid or not there
	NoTask      errs.Kind = "task.no-task"      // no task of that id
	NoLessons   errs.Kind = "task.no-lessons"   // --remember without a Lessons section
	// LessonsLeft: a lesson not stored stopped the others; fact source,
	// the --source the memories take.
	LessonsLeft errs.Kind = "task.lessons-left"
)
