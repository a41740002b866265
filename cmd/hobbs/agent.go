package main

import (
	"io"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/subagent"
)

// agents is the catalog of agents of in: the framework's, the instance's
// own, with the binary's templates and in's audit log.
func (a *app) agents(in instance.Instance) subagent.Catalog {
	fw, _ := fs.Sub(hobbs.Assets, "src/agents")
	return subagent.Catalog{Instance: in, Framework: fw, Templates: hobbs.Templates, Audit: a.audit(in)}
}

func newAgentCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Sub-agents: definitions, context for delegation, operational learnings",
		Long: `Hobbs delegates work to sub-agents through Claude Code's Agent tool. Each
sub-agent gets the foundation (always, in full), the memories matching its tags,
and its own operational learnings: 'hobbs agent context NAME' prints exactly that.

Framework agents ship with Hobbs; your own live in agents/custom/ of the instance.`,
		Example: `  hobbs agent list
  hobbs agent new finance --tag money --description "Pays bills"
  hobbs agent context finance
  hobbs agent learn finance "The bank's export is CSV with ; separators"`,
	}
	cmd.AddCommand(newAgentListCmd(a), newAgentNewCmd(a), newAgentShowCmd(a), newAgentLearnCmd(a), newAgentContextCmd(a))
	return cmd
}

func newAgentListCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List framework and custom agents with their memory tags",
		Example: "  hobbs agent list\n  hobbs agent list --json | jq -r '.[].name'",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		defs, probs := a.agents(in).List()
		a.warnEach(probs, "")
		return printTable(out, defs, "", subagent.ListColumns, (*subagent.Definition).Row)
	})
	return cmd
}

func newAgentNewCmd(a *app) *cobra.Command {
	var tags []string
	var desc string
	cmd := &cobra.Command{
		Use:   "new NAME --tag T... [--description D]",
		Short: "Create a custom agent from the template",
		Long: `Create agents/custom/NAME.md (Claude Code subagent format, plus a hobbs
section with the memory tags the agent receives) and agents/NAME/operational.md.
Edit the file afterwards to give the agent its instructions and tools.

Inside the container it also links the file into Claude Code's user agents
directory ($CLAUDE_CONFIG_DIR/agents, as hobbs-init.sh does at start), where
the running session finds it without a restart; elsewhere the agent is there
from the next session.`,
		Example: `  hobbs agent new finance --tag money --tag tax --description "Pays bills and prepares tax paperwork"`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "memory tag the agent receives (repeatable, at least one)")
	cmd.Flags().StringVar(&desc, "description", "", "one line telling Hobbs when to use the agent")
	out := a.jsonFlag(cmd, "print the new definition as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		c := a.agents(in)
		d, err := c.New(subagent.NewOptions{Name: args[0], Description: desc, Tags: tags})
		if err != nil {
			return err
		}
		a.status("created %s", d.Path)
		a.status("%s", subagent.LinkIntoSession(c, d.Name))
		return out.printLine(d, d.Name, nil)
	})
	return cmd
}

func newAgentShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show an agent's definition and operational learnings",
		Example: "  hobbs agent show researcher\n  hobbs agent show researcher --json",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		v, err := a.agents(in).Show(args[0])
		if err != nil {
			return err
		}
		return out.print(v, v.WriteSummary)
	})
	return cmd
}

func newAgentLearnCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "learn NAME [TEXT|-]",
		Short: "Record an operational learning for an agent (deduplicated)",
		Long: `Append a dated lesson to agents/NAME/operational.md. A lesson already there
(compared ignoring case, spacing and punctuation) is not added again.
Operational learnings are about how to do the work; facts about the user are
memories (hobbs memory add).`,
		Example: `  hobbs agent learn researcher "Bank statements list dates as DD/MM/YYYY"
  echo "Ask for the PDF, not a photo" | hobbs agent learn reviewer -`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
	}
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		c := a.agents(in)
		d, err := c.Get(args[0])
		if err != nil {
			return err
		}
		text, err := a.textArg(args[1:], "lesson")
		if err != nil {
			return err
		}
		r, err := c.Learn(d.Name, text, time.Now())
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) error {
			if r.Added {
				a.status("learned: %s:%d", in.Rel(in.Operational(d.Name)), r.Line)
			} else {
				a.status("already known: %s:%d: %s", in.Rel(in.Operational(d.Name)), r.Line, r.Duplicate)
			}
			return nil
		})
	})
	return cmd
}
