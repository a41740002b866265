package serve

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/task"
)

// The Service is the channels' channel.Host: what the owner asks from a
// channel is answered here, from the queue and the task log, and what the
// owner's buttons ask is carried out by the same code as the commands
// (task review, playbook allow), audited there.

// Status answers /status: the queued and running runs, then, when the
// service runs with the launcher, the instance's sessions and the next
// scheduled runs.
func (s *Service) Status(ctx context.Context) (string, error) {
	q, err := s.queueStatus()
	if err != nil || s.opt.Launcher.Config == nil {
		return q, err
	}
	var b strings.Builder
	b.WriteString(q)
	if ses, err := launcher.List(ctx, s.opt.Launcher.Engine, s.opt.Instance); err != nil {
		fmt.Fprintf(&b, "\nsessions: unknown (%s)", firstLine(err.Error()))
	} else {
		fmt.Fprintf(&b, "\n%d sessions", len(ses))
		for _, x := range ses {
			fmt.Fprintf(&b, "\nsession: %s (%s)", x.Name, x.Status)
		}
	}
	if l, err := schedule.ListStatus(schedule.OptionsFromEnv(nil), s.opt.Now()); err == nil {
		for _, r := range l.Rows {
			if r.Instance == s.opt.Instance.Root {
				fmt.Fprintf(&b, "\nnext: %s at %s", r.Playbook, r.Next)
			}
		}
	}
	return b.String(), nil
}

// queueStatus is the queue at a glance (QueueStatus.Text).
func (s *Service) queueStatus() (string, error) {
	return s.status().Text() + s.mailStatus(), nil
}

// Runs answers /runs: the latest triggered runs and their outcomes.
func (s *Service) Runs(ctx context.Context) (string, error) {
	var done []Job
	for _, j := range s.q.list() {
		if j.State == Done {
			done = append(done, j)
		}
	}
	sort.SliceStable(done, func(a, b int) bool { return done[a].Finished.After(*done[b].Finished) })
	var lines []string
	for _, j := range done {
		name := j.Task
		if name == "" {
			name = j.ID
		}
		l := fmt.Sprintf("%s %s (trigger %s): %s", name, j.Playbook, j.Trigger, j.Outcome)
		if j.Note != "" {
			l += " — " + j.Note
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "no triggered run has ended yet", nil
	}
	return strings.Join(lines, "\n"), nil
}

// Stop answers /stop NAME: a waiting run (by its job id) is dropped, a
// running one (by its job or task id) stopped. The queue drops a waiting
// run in one step with its look (queue.drop), so a run the scheduler
// starts meanwhile is seen running and stopped, never recorded as dropped
// while it runs on.
func (s *Service) Stop(ctx context.Context, name string) (string, error) {
	const note = "stopped by the owner before it started"
	j, ok, err := s.q.drop(name, task.Failed, note, s.opt.Now())
	if err != nil {
		return "", err
	}
	if stopLooked != nil {
		stopLooked()
	}
	switch {
	case ok && j.State == Running:
		s.mu.Lock()
		r, running := s.running[j.ID]
		s.mu.Unlock()
		if running {
			r.cancel()
			s.audit(audit.Entry{Event: "serve.stop", Subject: name, Outcome: "ok", Detail: map[string]any{"state": Running}})
			return "stopping " + name, nil
		}
	case ok && j.State == Queued:
		if j.Task != "" { // a job converted from an older hobbs has its task already
			if _, err := s.opt.Tasks.Done(j.Task, task.DoneOptions{Outcome: task.Failed, Retro: "## Run\n\n- " + note + "\n"}); err != nil {
				s.logf("task %s: %v", j.Task, err)
			}
		}
		s.audit(audit.Entry{Event: "serve.stop", Subject: name, Outcome: "ok", Detail: map[string]any{"state": Queued}})
		return "dropped " + name + " from the queue", nil
	}
	return "", errs.Usagef("no queued or running run %s", name)
}

// Act carries out a pressed button: a supervised run's review
// (task.Log.SetReview) or a host for a playbook's runs
// (playbook.Store.AllowHost), each audited by its package.
func (s *Service) Act(ctx context.Context, a channel.Action) (string, error) {
	switch a.Kind {
	case channel.ActApprove, channel.ActReject:
		verdict := task.ReviewApproved
		if a.Kind == channel.ActReject {
			verdict = task.ReviewRejected
		}
		if err := task.ValidID(a.Task); err != nil {
			return "", err
		}
		if _, err := s.opt.Tasks.SetReview(a.Task, verdict, "from the owner's channel"); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s", a.Task, verdict), nil
	case channel.ActAllowHost:
		if s.opt.Playbooks == nil {
			return "", errs.Failf("playbooks are not open in this service")
		}
		res, err := s.opt.Playbooks.AllowHost(a.Playbook, a.Host, "allowed from the owner's channel")
		if err != nil {
			return "", err
		}
		if !res.Changed {
			return fmt.Sprintf("%s already allows %s", a.Playbook, res.Host), nil
		}
		return fmt.Sprintf("%s may now reach %s", a.Playbook, res.Host), nil
	case channel.ActAnswer:
		return s.answerQuestion(a)
	case channel.ActDenyHost:
		s.audit(audit.Entry{Event: "playbook.allow", Subject: a.Playbook, Outcome: "denied", Detail: map[string]any{"host": a.Host, "by": "channel"}})
		return fmt.Sprintf("%s stays refused for %s", a.Host, a.Playbook), nil
	}
	return "", errs.Usagef("unknown action %q", a.Kind)
}

// ErrNoChat is Chat's answer while no chat is set up.
var ErrNoChat = errs.Failf("chat is not set up")

// Chat is one turn of the owner's conversation, by Options.Chat.
func (s *Service) Chat(ctx context.Context, conversation string, m channel.Message) (string, error) {
	if s.opt.Chat == nil {
		return "", ErrNoChat
	}
	return s.opt.Chat(ctx, conversation, m)
}
