package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// Held requests' questions on the owner's channels (docs/serve.md, "Held
// requests"): serve reads the approvals directory (package approval) and
// sends each new question as a notice whose buttons are its answers, which
// expire with its hold. A press is answered through the same
// approval.Owner as hobbs approvals on the host: the first answer wins, and
// a press after an answer on the host is told what it was.

// approvalPoll is how often serve reads the approvals directory for new
// questions.
const approvalPoll = 250 * time.Millisecond

// watchApprovals delivers each new question to the channels until ctx
// ends. A notice id is sent once, across restarts (the channel keeps the
// ids it accepted): a question still waiting when serve restarts is not
// sent twice.
func (s *Service) watchApprovals(ctx context.Context) {
	if s.opt.Approvals == nil || len(s.opt.Channels) == 0 {
		return
	}
	sent := map[string]bool{}
	t := time.NewTicker(approvalPoll)
	defer t.Stop()
	for {
		qs, _, err := s.opt.Approvals.Dir.Waiting()
		if err != nil {
			s.logf("approvals: %v", err)
		}
		now := s.now()
		for _, q := range qs {
			if sent[q.ID] || !now.Before(q.Expires) {
				continue
			}
			sent[q.ID] = true
			s.deliver(questionNotice(q, now))
		}
		if len(sent) > 4*approval.MaxPerInstance {
			sent = map[string]bool{} // the channel's own ids keep it from sending one twice
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) now() time.Time {
	if s.opt.Now != nil {
		return s.opt.Now()
	}
	return time.Now()
}

// questionNotice is the owner's message for question q: who asks (the
// session, how it started, whether it is tainted and why), what (method,
// host and port, a plain request's path without its query, quoted: it is
// the agent's text), how many requests wait, and until when; one button
// per answer offered.
func questionNotice(q approval.Question, now time.Time) channel.Notice {
	var b strings.Builder
	who := "Session " + q.Session + " (" + q.Origin + ")"
	if q.Playbook != "" {
		who = "A run of playbook " + q.Playbook + " (session " + q.Session + ", " + q.Origin + ")"
	}
	fmt.Fprintf(&b, "%s asks to reach a host outside its policy:\n", who)
	if q.Method == "CONNECT" {
		fmt.Fprintf(&b, "CONNECT %s (HTTPS)\n", q.Target())
	} else {
		fmt.Fprintf(&b, "%s %s, path %q\n", q.Method, q.Target(), clip(q.Path, 200))
	}
	if q.Tainted {
		fmt.Fprintf(&b, "It is tainted (%s): Always is not offered.\n", clip(strings.Join(q.Why, "; "), 300))
	}
	waiting := "1 request waits"
	if q.Waiting > 1 {
		waiting = fmt.Sprintf("%d requests wait", q.Waiting)
	}
	fmt.Fprintf(&b, "%s; unanswered, it is refused in %v.", waiting, q.Expires.Sub(now).Round(time.Second))
	n := channel.Notice{ID: "approval:" + q.ID, Text: b.String(), Expires: q.Expires}
	labels := map[string]string{approval.Once: "Once", approval.Session: "This session", approval.Always: "Always", approval.Deny: "Deny"}
	for _, a := range q.Answers {
		if l, ok := labels[a]; ok {
			n.Buttons = append(n.Buttons, channel.Action{Kind: channel.ActAnswer, Label: l, Question: q.ID, Answer: a})
		}
	}
	return n
}

// clip cuts s to n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// answerQuestion carries out an answer button.
func (s *Service) answerQuestion(a channel.Action) (string, error) {
	if s.opt.Approvals == nil {
		return "", errs.Failf("held requests are not answered by this service")
	}
	res, err := s.opt.Approvals.Answer(a.Question, a.Answer, approval.ViaTelegram, a.By)
	var e *errs.Error
	if errors.As(err, &e) {
		switch e.Advice.Kind {
		case approval.AlreadyAnswered:
			return fmt.Sprintf("already answered on the %s: %s", res.Answer.Via, res.Answer.Answer), nil
		case approval.NotFound:
			return "too late: the request was refused when its hold ended (or its session ended)", nil
		}
	}
	if err != nil {
		return "", err
	}
	q := res.Question
	switch a.Answer {
	case approval.Once:
		return fmt.Sprintf("%s may reach %s this once", q.Session, q.Target()), nil
	case approval.Session:
		return fmt.Sprintf("%s may reach %s until it ends", q.Session, q.Target()), nil
	case approval.Always:
		if q.Playbook != "" {
			return fmt.Sprintf("%s may reach %s; playbook %s's run: block gains it when the run ends", q.Session, q.Target(), q.Playbook), nil
		}
		return fmt.Sprintf("%s may reach %s; added to %s", q.Session, q.Target(), res.Wrote), nil
	}
	return fmt.Sprintf("%s stays refused for %s", q.Target(), q.Session), nil
}
