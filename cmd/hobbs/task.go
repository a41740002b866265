package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/task"
)

// rememberLessons stores each lesson of a retrospective with hobbs memory
// add's logic (memory.Store.Rememberer), saying what it did.
func rememberLessons(a *app, in instance.Instance) task.Rememberer {
	return memory.Open(in, a.audit(in)).Rememberer(func(res *memory.AddResult, text string) {
		a.status("lesson %s %s: %s", res.Action, res.ID, text)
	})
}

func newTaskCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Task log: record delegated work, its outcome and its retrospective",
		Long: `Every task Hobbs delegates (or tracks) gets a record in logs/tasks/: who did
it, which playbook it followed, the outcome and a retrospective. Lessons from a
retrospective can become memories with --remember.`,
		Example: `  id=$(hobbs task start "Reconcile October statements" --agent finance --playbook monthly-reconcile)
  hobbs task done "$id" --outcome ok --retro retro.md --remember
  hobbs task list`,
	}
	cmd.AddCommand(newTaskStartCmd(a), newTaskDoneCmd(a), newTaskListCmd(a), newTaskShowCmd(a), newTaskReviewCmd(a),
		newTaskDecideCmd(a, "approve"), newTaskDecideCmd(a, "reject"))
	return cmd
}

func newTaskStartCmd(a *app) *cobra.Command {
	var agent, pbName string
	cmd := &cobra.Command{
		Use:     "start TITLE [--agent NAME] [--playbook NAME]",
		Short:   "Start a task record and print its id",
		Example: `  hobbs task start "Draft the newsletter" --agent reviewer`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent doing the work (hobbs agent list)")
	cmd.Flags().StringVar(&pbName, "playbook", "", "playbook being followed (hobbs playbook list)")
	out := a.jsonFlag(cmd, "print the task as JSON")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		in := log.Instance
		if agent != "" {
			if _, err := a.agents(in).Get(agent); err != nil {
				return err
			}
		}
		t, err := log.Start(args[0], agent, pbName)
		if err != nil {
			return err
		}
		return out.printLine(t, t.ID, nil)
	})
	return cmd
}

func newTaskDoneCmd(a *app) *cobra.Command {
	var outcomeFlag, retro string
	var remember bool
	cmd := &cobra.Command{
		Use:   "done ID --outcome ok|failed [--retro FILE|-] [--remember]",
		Short: "Finish a task with its outcome and retrospective",
		Long: `Record the outcome of a running task and append its retrospective (Markdown
from a file, or - for stdin). With --remember, each bullet under a "Lessons"
heading of the retrospective becomes a memory tagged "task" and the agent's name,
with the task as its source.

A lesson that looks like a secret (a token, a key, a password in a URL) is not
remembered: memories are plaintext and loaded into every session. The task is
recorded and the other lessons are stored; a warning names the skipped lesson's
number and the kind of secret, never its text, and the exit status stays 0
(--json lists them under skipped_lessons). Keep the secret in the vault and
remember where it lives instead.

Exit status: 0 when the task is recorded and every lesson not skipped is
stored; 1 when a lesson could not be stored for another reason (the task is
recorded all the same, with the memories made before it; the error names the
lesson's number); 2 for bad usage, including --remember without a Lessons
section (nothing is recorded then).`,
		Example: `  hobbs task done task_20261122_001 --outcome ok
  hobbs task done task_20261122_002 --outcome failed --retro - --remember <<'EOF'
  The bank export timed out twice.
  ## Lessons
  - Export statements before 9am; the bank's site is slow later.
  EOF`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&outcomeFlag, "outcome", "", "ok or failed (required)")
	cmd.Flags().StringVar(&retro, "retro", "", "retrospective Markdown file, or - for stdin")
	cmd.Flags().BoolVar(&remember, "remember", false, "store the retrospective's Lessons bullets as memories")
	_ = cmd.MarkFlagRequired("outcome")
	out := a.jsonFlag(cmd, "print the task as JSON")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		in := log.Instance
		opts := task.DoneOptions{Outcome: outcomeFlag}
		if retro != "" {
			b, err := a.readFileFlag("--retro", retro)
			if err != nil {
				return err
			}
			opts.Retro = string(b)
		}
		if remember {
			if retro == "" {
				return withHint(errs.Usagef("--remember needs a retrospective"), "pass --retro FILE or --retro -")
			}
			opts.Remember = rememberLessons(a, in)
		}
		t, err := log.Done(args[0], opts)
		if t != nil {
			for _, sk := range t.Skipped {
				a.warn("lesson %d not remembered: it looks like a secret (%s), and memories are plaintext loaded into every session; "+
					"keep the secret in the vault (hobbs vault set NAME, on the host) and remember where it lives", sk.Lesson, sk.Kind)
			}
		}
		if err != nil {
			return err
		}
		return out.print(t, func(w io.Writer) error {
			a.status("%s: %s", t.ID, t.Status)
			for _, id := range t.Remembered {
				fmt.Fprintln(w, id)
			}
			return nil
		})
	})
	return cmd
}

func newTaskListCmd(a *app) *cobra.Command {
	var status string
	cmd := &cobra.Command{
		Use:     "list [--status running|ok|failed]",
		Short:   "List tasks, newest first",
		Example: "  hobbs task list\n  hobbs task list --status running --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&status, "status", "", "only tasks with this status")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		list, probs := log.Find(task.Filter{Status: status})
		a.warnEach(probs, "")
		return printTable(out, list, "no tasks", task.ListColumns, (*task.Task).Row)
	})
	return cmd
}

func newTaskShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a task record",
		Example: "  hobbs task show task_20261122_001",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		t, err := log.Get(args[0])
		if err != nil {
			return err
		}
		return out.print(t, t.WriteSummary)
	})
	return cmd
}

// taskReviewLong says what a supervised run's review is, for hobbs task
// approve and reject.
const taskReviewLong = `A headless run of a supervised playbook (hobbs playbook run) waits for your
review: read its record (hobbs task show ID), check what it did, then approve
or reject it (as hobbs review approve and reject do a tainted session's
changes). hobbs playbook runs NAME shows the reviews of a playbook's runs,
and /review-playbooks suggests the next stage from them.`

// newTaskDecideCmd is hobbs task approve (verb "approve") or reject: the
// review of a supervised run's result.
func newTaskDecideCmd(a *app, verb string) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use: verb + " ID [--note TEXT]",
		Short: map[string]string{"approve": "Approve the result of a supervised playbook run",
			"reject": "Reject the result of a supervised playbook run"}[verb],
		Long: taskReviewLong,
		Example: map[string]string{"approve": `  hobbs task show task_20261124_003
  hobbs task approve task_20261124_003`,
			"reject": `  hobbs task reject task_20261124_004 --note "booked two invoices twice"`}[verb],
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&note, "note", "", "why (one line, kept in the record)")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		return a.setReview(log, args[0], verb == "reject", note)
	})
	return cmd
}

// setReview records the review of task id: approved, or rejected.
func (a *app) setReview(log task.Log, id string, reject bool, note string) error {
	verdict := task.ReviewApproved
	if reject {
		verdict = task.ReviewRejected
	}
	t, err := log.SetReview(id, verdict, note)
	if err != nil {
		return err
	}
	a.status("task %s (%s): %s", t.ID, orDash(t.Playbook), verdict)
	return nil
}

// newTaskReviewCmd is hobbs task review ID --approve|--reject, the older
// form of hobbs task approve and reject, kept for scripts (hidden).
func newTaskReviewCmd(a *app) *cobra.Command {
	var approve, reject bool
	var note string
	cmd := &cobra.Command{
		Use:     "review ID --approve|--reject [--note TEXT]",
		Short:   "Approve or reject the result of a supervised playbook run (hobbs task approve, reject)",
		Long:    taskReviewLong + "\n\nThis is the older form of hobbs task approve ID and hobbs task reject ID.",
		Example: "  hobbs task review task_20261124_003 --approve",
		Hidden:  true,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().BoolVar(&approve, "approve", false, "the run did what it should")
	cmd.Flags().BoolVar(&reject, "reject", false, "the run did not do what it should")
	cmd.Flags().StringVar(&note, "note", "", "why (one line, kept in the record)")
	cmd.MarkFlagsMutuallyExclusive("approve", "reject")
	cmd.MarkFlagsOneRequired("approve", "reject")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		return a.setReview(log, args[0], reject, note)
	})
	return cmd
}
