package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/style"
)

func newReviewCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List the changes of tainted sessions that wait for your review",
		Long: `A session that read from a host you do not trust (policy.yaml trusted:, hobbs policy
trust) or was started by an outside event is tainted: what it changed in memory,
playbooks, skills and agents was taken out of effect at its end and waits here
(docs/memory.md). Each change's text is held as a copy in the instance's
provenance/held/, with its hash. show prints a change as a diff against what is in
effect (three-way, conflicts marked, when that changed since the change was held);
approve writes the held copies in place, all or none, only if each is still the text
that was held and its file still what it was held against; reject keeps them out for
good (their copies stay in provenance/held/).`,
		Example: `  hobbs review
  hobbs review show r3
  hobbs review approve r3 r4
  hobbs review approve --all-from hobbs-20261126-101500
  hobbs review reject r5
  hobbs review --json`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "also the changes approved or rejected")
	cmd.RunE = a.withReview(func(s *provenance.Store, _ []string) error {
		items, err := s.List(all)
		if err != nil {
			return err
		}
		if items == nil {
			items = provenance.Items{}
		}
		return out.print(items, func(w io.Writer) error {
			if len(items) == 0 {
				a.status("nothing waits for review")
				return nil
			}
			return items.Write(w)
		})
	})
	show := &cobra.Command{Use: "show ID", Short: "Print a held change as a diff against what is in effect", Args: usageArgs(cobra.ExactArgs(1)),
		Example: "  hobbs review show r3"}
	showOut := a.jsonFlag(show, "print the change, its texts and what is in effect as JSON")
	show.RunE = a.withReview(func(s *provenance.Store, args []string) error {
		c, err := s.Change(args[0])
		if err != nil {
			return err
		}
		return showOut.print(c, c.WriteDiff)
	})
	cmd.AddCommand(show, newReviewDecideCmd(a, "approve"), newReviewDecideCmd(a, "reject"))
	return cmd
}

func newReviewDecideCmd(a *app, verb string) *cobra.Command {
	var from string
	cmd := &cobra.Command{Use: verb + " ID...|--all-from SESSION", Short: map[string]string{
		"approve": "Put held changes in effect (all or none)", "reject": "Keep held changes out of effect for good"}[verb],
		Example: "  hobbs review " + verb + " r3 r4\n  hobbs review " + verb + " --all-from hobbs-20261126-101500"}
	cmd.Flags().StringVar(&from, "all-from", "", "every waiting change found while SESSION was live")
	cmd.RunE = a.withReview(func(s *provenance.Store, ids []string) error {
		n, err := s.Decide(verb, ids, from)
		if err == nil {
			a.status("%s %s", map[string]string{"approve": "approved", "reject": "rejected"}[verb], style.N(n, "change", "changes"))
		}
		return err
	})
	return cmd
}

// withReview runs body with the instance's provenance store (a session's
// lists only, provenance.ForReview).
func (a *app) withReview(body func(s *provenance.Store, args []string) error) runE {
	return a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		return body(provenance.ForReview(in.FS(), a.audit(in)), args)
	})
}
