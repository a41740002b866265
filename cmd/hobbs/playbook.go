package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/style"
	"github.com/hobbs-agent/hobbs/src/task"
)

func newPlaybookCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "playbook",
		Short: "Document workflows and move them towards automation",
		Long: `A playbook documents a workflow you do by hand: what starts it, its inputs,
steps, outputs, judgment calls and sensitive data, and what could be
automated. Playbooks live in the instance as playbooks/<name>.md (Markdown
with frontmatter) and climb the automation ladder one stage at a time:

  manual → assisted → supervised → autonomous

Supervised and autonomous playbooks can run headless (playbook run) with
only what their run: block declares; autonomous ones can be scheduled
(hobbs schedule).

Each playbook is due for review every review_every days (default:
playbooks.review_every_days in config.yaml). Inside a session, the
/capture-playbook and /review-playbooks skills drive these commands.`,
		Example: `  hobbs playbook new weekly-invoices --title "Pay the weekly invoices"
  hobbs playbook list --due
  hobbs playbook stage weekly-invoices assisted --reason "drafts are reliable"
  hobbs playbook reviewed weekly-invoices --note "merged steps 3 and 4"`,
	}
	cmd.AddCommand(newPlaybookNewCmd(a), newPlaybookListCmd(a), newPlaybookShowCmd(a), newPlaybookUpdateCmd(a),
		newPlaybookStageCmd(a), newPlaybookReviewedCmd(a), newPlaybookLintCmd(a), newPlaybookAllowCmd(a),
		newPlaybookRunCmd(a), newPlaybookApproveCmd(a), newPlaybookRunsCmd(a), newPlaybookRmCmd(a))
	return cmd
}

func newPlaybookNewCmd(a *app) *cobra.Command {
	var title, from string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Create a playbook from the template or from composed Markdown",
		Long: `Create playbooks/NAME.md. NAME is kebab-case (weekly-invoices). An existing
playbook is never overwritten.

Without --from the file starts from the template with empty sections. With
--from FILE (or - for stdin) the content is Markdown you composed: either a
body with the ## sections (Trigger, Inputs, Steps, Outputs, Judgment Calls,
Sensitive Data, Automation Potential, Notes), or a whole file with
frontmatter. Missing frontmatter keys are filled in (stage manual, dates
today, review_every from config). Content without every section is refused.`,
		Example: `  hobbs playbook new weekly-invoices
  hobbs playbook new weekly-invoices --title "Pay the weekly invoices"
  hobbs playbook new weekly-invoices --from draft.md
  cat draft.md | hobbs playbook new weekly-invoices --from -`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&title, "title", "", "title (default: from the source's heading, else from NAME)")
	cmd.Flags().StringVar(&from, "from", "", "read the playbook from `FILE` (- for stdin) instead of the template")
	out := a.jsonFlag(cmd, "print the new playbook's metadata as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		opt := playbook.NewOptions{Title: title}
		if cmd.Flags().Changed("from") {
			var err error
			if opt.Source, err = a.readFileFlag("--from", from); err != nil {
				return err
			}
		}
		p, err := st.New(args[0], opt)
		if err != nil {
			return err
		}
		var e playbook.Entry
		if out.json {
			if _, e, err = st.Get(args[0]); err != nil {
				return err
			}
		}
		return out.printLine(e, p, func() { a.status("created playbook %s", args[0]) })
	})
	return cmd
}

func newPlaybookListCmd(a *app) *cobra.Command {
	var due bool
	var stage string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List playbooks with their stage and next review",
		Long: `List the playbooks, sorted by name: name, stage, next review date (DUE when
it has passed or the playbook was never reviewed) and title. Files that do
not parse are reported on stderr and skipped.`,
		Example: `  hobbs playbook list
  hobbs playbook list --due
  hobbs playbook list --stage supervised --json`,
		Args: usageArgs(cobra.NoArgs),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if stage != "" {
				return playbook.CheckStage(stage)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&due, "due", false, "only playbooks due for review")
	cmd.Flags().StringVar(&stage, "stage", "", "only playbooks at `STAGE` (manual, assisted, supervised, autonomous)")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		entries, problems, err := st.List()
		if err != nil {
			return err
		}
		a.warnEach(problems, " (file left as is)")
		list := playbook.Select(entries, due, stage)
		none := "no playbooks"
		if due {
			none += " due for review"
		}
		return printTable(out, list, none, "NAME\tSTAGE\tNEXT REVIEW\tTITLE", func(e playbook.Entry) string {
			next := e.NextReview
			if e.Due {
				next = "DUE"
				if e.NextReview != "" {
					next += " (" + e.NextReview + ")"
				}
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s", e.Name, e.Stage, next, e.Title)
		})
	})
	return cmd
}

func newPlaybookShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a playbook",
		Long: `Print playbooks/NAME.md as it is on disk, or with --json its metadata, next
review, lint problems and body.`,
		Example: `  hobbs playbook show weekly-invoices
  hobbs playbook show weekly-invoices --json | jq .stage`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print metadata and body as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		d, v, err := st.Show(args[0])
		if err != nil {
			return err
		}
		return out.print(v, func(w io.Writer) error {
			_, err := w.Write(d.Raw())
			return err
		})
	})
	return cmd
}

func newPlaybookRmCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a playbook (and its approval)",
		Long: `Remove playbooks/NAME.md, whether or not it parses, and its run: block's
approval: a playbook made again under NAME starts unapproved. The task
records of its runs stay (hobbs playbook runs NAME lists them); a schedule
of it stays until hobbs schedule rm NAME.`,
		Example: `  hobbs playbook rm weekly-invoices
  hobbs playbook rm weekly-invoices --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		r, err := st.Remove(args[0])
		if err != nil {
			return err
		}
		return out.printLine(r, r.Name, func() {
			a.status("removed %s", r.Path)
			if r.Approval {
				a.status("removed its approval: a playbook made again as %s starts unapproved", r.Name)
			}
		})
	})
	return cmd
}

func newPlaybookUpdateCmd(a *app) *cobra.Command {
	var title, from, note string
	cmd := &cobra.Command{
		Use:   "update NAME --from FILE|-",
		Short: "Replace a playbook's content with a revised version",
		Long: `Replace the content of playbooks/NAME.md with a revised version from --from
FILE (or - for stdin): a body with every ## section, or a whole file with
frontmatter (for instance an edited copy of 'hobbs playbook show NAME').

The stage, created and last_reviewed dates are kept (change the stage with
'hobbs playbook stage'); updated becomes today and a dated line goes under
Notes, with --note saying what changed. Identical content changes nothing.
The previous version is not kept by hobbs: keep the instance in git
(hobbs init --git) for history.`,
		Example: `  hobbs playbook show weekly-invoices > draft.md   # edit draft.md
  hobbs playbook update weekly-invoices --from draft.md --note "added the supplier portal"`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
			src, err := a.readFileFlag("--from", from)
			if err != nil {
				return err
			}
			changed, err := st.Update(args[0], playbook.UpdateOptions{Title: title, Source: src, Note: note})
			if err != nil {
				return err
			}
			if !changed {
				a.status("%s: same content; nothing changed", args[0])
				return nil
			}
			a.status("updated playbook %s", args[0])
			return nil
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "read the new content from `FILE` (- for stdin)")
	cmd.Flags().StringVar(&title, "title", "", "new title (default: keep, or the source's frontmatter title)")
	cmd.Flags().StringVar(&note, "note", "", "what changed (one line, goes under Notes)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func newPlaybookStageCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "stage NAME STAGE",
		Short: "Move a playbook up or down the automation ladder",
		Long: `Set the stage of a playbook on the ladder manual → assisted → supervised →
autonomous. It moves up one stage at a time and down any number. The change
is dated under the playbook's Notes with --reason (required) and recorded in
the audit log. Setting the stage it already has changes nothing.`,
		Example: `  hobbs playbook stage weekly-invoices assisted --reason "Hobbs drafts, I send"
  hobbs playbook stage weekly-invoices manual --reason "the bank changed its site"`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the playbook changes stage (required, one line)")
	_ = cmd.MarkFlagRequired("reason")
	out := a.jsonFlag(cmd, "print the change as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		ch, err := st.SetStage(args[0], args[1], reason)
		if err != nil {
			return err
		}
		return out.print(ch, func(w io.Writer) error {
			if ch.From == ch.To {
				a.status("%s is already %s; nothing changed", ch.Name, ch.To)
			} else {
				a.status("%s: %s → %s", ch.Name, ch.From, ch.To)
			}
			return nil
		})
	})
	return cmd
}

func newPlaybookReviewedCmd(a *app) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "reviewed NAME",
		Short: "Record that a playbook was reviewed today",
		Long: `Set last_reviewed (and updated) to today and append a dated line under
Notes, with --note saying what changed. The next review falls review_every
days later.`,
		Example: `  hobbs playbook reviewed weekly-invoices
  hobbs playbook reviewed weekly-invoices --note "merged steps 3 and 4; step 5 could be a skill"`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&note, "note", "", "what the review changed (one line)")
	out := a.jsonFlag(cmd, "print the review as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		r, err := st.Reviewed(args[0], note)
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) error {
			a.status("%s reviewed %s; next review %s", r.Name, r.Date, r.NextReview)
			return nil
		})
	})
	return cmd
}

func newPlaybookLintCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check every playbook's frontmatter and sections",
		Long: `Check every playbooks/*.md: file name, frontmatter (types, stage, dates,
unknown or missing keys) and the required sections. Each problem is printed
as path:line: reason. Nothing is changed. Exit status 1 when any problem is
found.`,
		Example: `  hobbs playbook lint
  hobbs playbook lint --json`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print problems as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		problems, n, err := st.Lint()
		if err != nil {
			return err
		}
		return a.printLint(out, problems, errs.Failf("%s in %s", style.N(len(problems), "problem", "problems"), style.N(n, "playbook", "playbooks")), style.N(n, "playbook", "playbooks")+" ok")
	})
	return cmd
}

func newPlaybookAllowCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "allow NAME HOST",
		Short: "Let a playbook's headless runs reach a host",
		Long: `Add HOST to the run.hosts of playbooks/NAME.md (creating the run: block when
there is none). HOST is an egress policy domains entry: api.example.com,
*.example.com (its subdomains), example.com:8443. A run reaches a host only
when both its playbook and the instance policy allow it: the policy's side
is 'hobbs policy allow HOST'.

The run: block is rewritten in hobbs's layout (a comment inside it is lost);
updated becomes today and a dated line goes under Notes. A host already
listed changes nothing. A playbook you had approved (hobbs playbook
approve) stays approved, as written with the host added.`,
		Example: `  hobbs playbook allow weekly-invoices api.bank.example --reason "the statements API"
  hobbs playbook allow weekly-invoices '*.files.bank.example'`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why runs need the host (one line, goes under Notes)")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		res, err := st.AllowHost(args[0], args[1], reason)
		if err != nil {
			return err
		}
		return out.print(res, func(w io.Writer) error {
			if !res.Changed {
				a.status("%s: runs already allow %s; nothing changed", res.Name, res.Host)
			} else {
				a.status("%s: runs may reach %s", res.Name, res.Host)
			}
			if pol, err := effectivePolicy(in); err == nil {
				if d, err := pol.Check(res.Host); err == nil && !d.Allow && !strings.HasPrefix(res.Host, "*.") {
					a.hint("the instance policy does not allow %s yet: hobbs policy allow %s", res.Host, res.Host)
				}
			}
			return nil
		})
	})
	return cmd
}

// detachPlaybookRun starts the run in the background (launcher.StartPlaybookRun).
func (a *app) detachPlaybookRun(in instance.Instance, name string, scheduled bool) error {
	pid, logPath, err := launcher.StartPlaybookRun(in, name, scheduled)
	if err != nil {
		return err
	}
	a.status("playbook %s: running in the background (pid %d); output in %s", name, pid, logPath)
	a.status("follow it with: hobbs playbook runs %s", name)
	return nil
}

func newPlaybookRunsCmd(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs NAME",
		Short: "List a playbook's headless runs, newest first, with their reviews",
		Long: `List the tasks that headless runs of playbooks/NAME.md recorded (hobbs
playbook run): when, outcome, and for a supervised playbook's runs the
review (pending until hobbs task approve ID or hobbs task reject ID).`,
		Example: "  hobbs playbook runs weekly-invoices\n  hobbs playbook runs weekly-invoices --json --limit 5",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many runs (0: all)")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withTasks(func(cmd *cobra.Command, args []string, log task.Log) error {
		if !playbook.ValidName(args[0]) {
			return errs.Usagef("invalid playbook name %q", args[0])
		}
		runs, probs := log.Find(task.Filter{Playbook: args[0], Runs: true, Limit: limit})
		a.warnEach(probs, "")
		none := fmt.Sprintf("no runs of %s (start one: hobbs playbook run %s)", args[0], args[0])
		return printTable(out, runs, none, "TASK\tSTARTED\tSTATUS\tREVIEW", func(t *task.Task) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s", t.ID, t.Started.Local().Format("2006-01-02 15:04"), t.Status, orDash(t.Review))
		})
	})
	return cmd
}

func newPlaybookApproveCmd(a *app) *cobra.Command {
	var diff bool
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve a playbook for its headless runs (on the host)",
		Long: `Record playbooks/NAME.md, as it is now, as what its headless runs carry
out: its whole text (the run: block and the steps) and every file of the
instance's skills and sub-agents it names. Sessions can edit playbooks and
skills, so hobbs playbook run runs only what you approved on the host: a
playbook that changed since in one byte, or whose named skills or
sub-agents changed, is refused until you approve it again. The approval
is kept in the instance's grants/ directory, which no session mounts.
hobbs schedule add approves what it schedules; a run on a terminal asks;
allow, stage, reviewed and update on the host keep an approved playbook
approved as they write it.

It prints what changed since the last approval (on stderr) and what a run
would get. --diff prints what changed (on stdout) and approves nothing:
exit 0 when nothing did, 1 otherwise.`,
		Example: `  hobbs playbook approve weekly-invoices --diff
  hobbs playbook approve weekly-invoices`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().BoolVar(&diff, "diff", false, "print what changed since the approval; approve nothing")
	out := a.jsonFlag(cmd, "print the grant as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		w := a.errOut // the output is the grant
		if diff {
			w = a.out
		}
		if changed, err := st.Diff(w, args[0]); err != nil || diff {
			if err == nil && changed {
				err = errs.Failf("%s changed since its approval", args[0]).Advise(playbook.ApproveAgain, "name", args[0])
			}
			return err
		}
		pol, err := effectivePolicy(in)
		if err != nil {
			return err
		}
		g, spec, err := st.ApproveRuns(args[0], pol)
		if err != nil {
			return err
		}
		return out.print(g, func(w io.Writer) error {
			spec.WriteSummary(w)
			a.status("approved %s for its headless runs", args[0])
			return nil
		})
	})
	return cmd
}

func newPlaybookRunCmd(a *app) *cobra.Command {
	var dryRun, scheduled, detach, plan bool
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run a playbook headless, with only what it declares",
		Long: `Run playbooks/NAME.md headless: a session without a terminal in which Hobbs
carries out the playbook, within the hosts, secrets, tools, turn and time
limits its run: block declares (hosts: only those the instance policy
allows too).

Only supervised and autonomous playbooks run headless; an autonomous one
must have a run: block; a supervised one without it runs with the instance
defaults, and says so. Two runs of one playbook never overlap: a second is
refused while the first holds the run lock.

--dry-run checks all of this and prints what a run would be allowed,
without starting anything. --plan prints the run's whole plan instead:
both containers, every mount, the proxy's own policy, the secrets by name
and Claude Code's command line with its tools and turn limit (--json: all
of it). Neither holds a secret's value. --scheduled is what schedules run (hobbs
schedule add): it refuses a playbook that is no longer autonomous.`,
		Example: `  hobbs playbook run weekly-invoices --dry-run
  hobbs playbook run weekly-invoices --plan
  hobbs playbook run weekly-invoices --plan --json
  hobbs playbook run weekly-invoices`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check the playbook and print what a run would be allowed; start nothing")
	cmd.Flags().BoolVar(&scheduled, "scheduled", false, "a run started by a schedule: only an autonomous playbook runs")
	cmd.Flags().BoolVar(&detach, "detach", false, "check, then run in the background; print where its output goes")
	cmd.Flags().BoolVar(&plan, "plan", false, "check the playbook and print the run's whole plan; start nothing")
	out := a.jsonFlag(cmd, "with --dry-run or --plan: print the run's spec or plan as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		name := args[0]
		pol, err := effectivePolicy(in)
		if err != nil {
			return err
		}
		c, err := st.PrepareRun(name, pol, scheduled, dryRun || plan)
		if err != nil {
			return err
		}
		spec := c.Spec
		if spec.Notice != "" {
			a.warn("%s", spec.Notice)
		}
		for _, x := range spec.Excluded {
			a.warn("run host %s: %s (allow it with: %s)", x.Host, x.Reason, x.Fix)
		}
		if dryRun || plan {
			if c.Unapproved != nil {
				a.warn("%v (%s)", c.Unapproved, hintOf(c.Unapproved))
			}
			if plan {
				p, err := a.planPlaybookRun(in, spec, scheduled)
				if err != nil {
					return err
				}
				return out.print(p, p.WriteSummary)
			}
			return out.print(spec, func(w io.Writer) error {
				spec.WriteSummary(w)
				a.status("dry run: nothing started")
				return nil
			})
		}
		if out.json {
			return errs.Usagef("--json goes with --dry-run or --plan")
		}
		if c.Unapproved != nil {
			if scheduled || !a.stdinIsTTY() {
				return st.Refuse(name, "run: block not approved", c.Unapproved)
			}
			files, ok := askApproval(st, a.in, a.errOut, name, c)
			if !ok {
				return errs.Usagef("not approved; nothing started")
			}
			spec.Assets = files // what the approval read, as the run gets it
		}
		if detach {
			return a.detachPlaybookRun(in, name, scheduled)
		}
		return st.RunLocked(name, spec.Stage, func() error { return a.runPlaybookHeadless(a.ctx, in, spec, scheduled) })
	})
	return cmd
}

// askApproval shows on w why c's playbook may not run yet, what changed
// since its approval and what a run would get, asks whether to approve it
// as it was checked, and approves it on a yes read from r (a terminal),
// returning the skills' and sub-agents' files the approval read.
func askApproval(st *playbook.Store, r io.Reader, w io.Writer, name string, c playbook.RunCheck) ([]playbook.AssetFile, bool) {
	fmt.Fprintf(w, "hobbs: warning: %v\n", c.Unapproved)
	_, _ = playbook.WriteDiff(w, st.In, name, c.Doc)
	c.Spec.WriteSummary(w)
	fmt.Fprintf(w, "Approve %s, as shown, for its headless runs? [y/N] ", name)
	line, _ := bufio.NewReader(r).ReadString('\n')
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return nil, false
	}
	files, err := st.ApproveChecked(name, c)
	if err != nil {
		fmt.Fprintf(w, "hobbs: warning: approval not recorded: %v\n", err)
		return nil, false
	}
	return files, true
}
