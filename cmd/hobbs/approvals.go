package main

import (
	"fmt"
	"io"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/style"
)

func newApprovalsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List held requests waiting for your answer; allow or deny them",
		Long: `With egress.hold set in config.yaml, a request from a session to a host its
policy does not name waits (up to egress.hold) while you are asked, here and,
when hobbs serve runs, on its Telegram channel: the first answer wins.

approvals lists the questions waiting: the session (and the playbook of a
run), whether it is tainted and why, the request (method, host, port, and a
plain-HTTP request's path without its query), and how many requests wait.

  allow ID             this request (and those waiting with it); the next asks again
  allow ID --session   the host for the rest of the session or run
  allow ID --always    also add the host to policy.yaml, or, for a run with a
                       run: block, to the playbook's run: block (which stays
                       approved); never offered to a tainted session
  deny ID              refuse it now

Deny entries, private addresses and leaks are never held. An unanswered
request is refused when its hold ends (docs/egress.md).`,
		Example: `  hobbs approvals
  hobbs approvals --json
  hobbs approvals allow k3xq7mzt2hna
  hobbs approvals allow k3xq7mzt2hna --session
  hobbs approvals allow k3xq7mzt2hna --always
  hobbs approvals deny k3xq7mzt2hna`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print the waiting questions as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		if err := hostOnlyApprovals(); err != nil {
			return err
		}
		d := approval.Dir{Root: safefile.Beneath(in.Approvals())}
		qs, problems, err := d.Waiting()
		if err != nil {
			return err
		}
		for _, p := range problems {
			a.warn("%s (skipped)", p)
		}
		if qs == nil {
			qs = []approval.Question{}
		}
		return out.print(qs, func(w io.Writer) error { return writeQuestions(a, w, qs) })
	})
	cmd.AddCommand(newApprovalsAnswerCmd(a, "allow"), newApprovalsAnswerCmd(a, "deny"))
	return cmd
}

// writeQuestions prints the waiting questions, each as a short block.
func writeQuestions(a *app, w io.Writer, qs []approval.Question) error {
	if len(qs) == 0 {
		a.status("no request is waiting for an answer")
		return nil
	}
	now := time.Now()
	for i, q := range qs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		// The path is the agent's text: quoted, so that it cannot pass for
		// more lines of the listing.
		path := ""
		if q.Path != "" {
			path = fmt.Sprintf(" path %q", q.Path)
		}
		fmt.Fprintf(w, "%s  %s %s%s\n", q.ID, q.Method, q.Target(), path)
		fmt.Fprintf(w, "  session  %s\n", describeSession(q))
		if q.Tainted {
			fmt.Fprintf(w, "  tainted  %s\n", strings.Join(q.Why, "; "))
		}
		fmt.Fprintf(w, "  waiting  %s, %s left\n", style.N(q.Waiting, "request", "requests"), q.Expires.Sub(now).Round(time.Second))
		fmt.Fprintf(w, "  answers  %s\n", strings.Join(q.Answers, ", "))
	}
	return nil
}

// describeSession names a question's session and how it started.
func describeSession(q approval.Question) string {
	s := q.Session + " (" + q.Origin
	if q.Playbook != "" {
		s += ", run of playbook " + q.Playbook
	}
	return s + ")"
}

func newApprovalsAnswerCmd(a *app, verb string) *cobra.Command {
	var session, always bool
	cmd := &cobra.Command{
		Use: verb + " ID",
		Short: map[string]string{"allow": "Let a held request through (once, for the session, or always)",
			"deny": "Refuse a held request now"}[verb],
		Example: map[string]string{
			"allow": "  hobbs approvals allow k3xq7mzt2hna\n  hobbs approvals allow k3xq7mzt2hna --session\n  hobbs approvals allow k3xq7mzt2hna --always",
			"deny":  "  hobbs approvals deny k3xq7mzt2hna"}[verb],
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	if verb == "allow" {
		cmd.Flags().BoolVar(&session, "session", false, "allow the host for the rest of the session or run")
		cmd.Flags().BoolVar(&always, "always", false, "also add the host to policy.yaml (or the run's playbook run: block)")
		cmd.MarkFlagsMutuallyExclusive("session", "always")
	}
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		if err := hostOnlyApprovals(); err != nil {
			return err
		}
		answer := approval.Deny
		switch {
		case verb == "deny":
		case always:
			answer = approval.Always
		case session:
			answer = approval.Session
		default:
			answer = approval.Once
		}
		o := approval.OpenOwner(in, a.policyFile(in), st, a.audit(in))
		res, err := o.Answer(args[0], answer, approval.ViaHost, hostUser())
		if err != nil {
			return err
		}
		q := res.Question
		switch answer {
		case approval.Deny:
			a.status("denied %s %s for %s", q.Method, q.Target(), q.Session)
		case approval.Once:
			a.status("allowed %s %s once for %s", q.Method, q.Target(), q.Session)
		case approval.Session:
			a.status("allowed %s for the rest of %s", q.Target(), q.Session)
		case approval.Always:
			if q.Playbook != "" {
				a.status("allowed %s for the rest of %s; playbook %s's run: block gains it when the run ends", q.Target(), q.Session, q.Playbook)
			} else {
				a.status("allowed %s for the rest of %s, and added it to %s", q.Target(), q.Session, res.Wrote)
			}
		}
		return nil
	})
	return cmd
}

// hostOnlyApprovals refuses to answer from inside the agent's container,
// where the approvals directory is never mounted.
func hostOnlyApprovals() error {
	if instance.InContainer() {
		return errs.Usagef("hobbs approvals runs on the host, not in the agent's container")
	}
	return nil
}

// hostUser is who answers on the host, as the audit names them.
func hostUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "owner"
}
