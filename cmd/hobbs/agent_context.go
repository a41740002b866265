package main

import (
	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/subagent"
)

// noMemoryTag matches no memory (tags cannot contain NUL): an agent without
// tags gets no memories rather than all of them.
const noMemoryTag = "\x00"

func newAgentContextCmd(a *app) *cobra.Command {
	var budget int
	var format string
	cmd := &cobra.Command{
		Use:   "context NAME [--budget CHARS] [--format text|hook|json]",
		Short: "Print a sub-agent's starting context: foundation, tagged memories, learnings",
		Long: `Print what Hobbs passes to a sub-agent it delegates to: foundation.md in
full (never filtered or cut), then the active memories carrying any of the
agent's tags, best first, as many as fit the budget (default:
memory.context_budget in config.yaml), then the agent's operational learnings.

For "hobbs" itself it is the session context: claude.md and its learnings with
all active memories. --format hook prints the JSON a Claude Code SubagentStart
hook returns (SessionStart for hobbs).`,
		Example: `  hobbs agent context researcher
  hobbs agent context finance --budget 4000
  hobbs agent context reviewer --format json | jq '.memories[].id'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			return checkContextFormat(format)
		},
	}
	cmd.Flags().IntVar(&budget, "budget", 0, "characters at most (default: memory.context_budget)")
	cmd.Flags().StringVar(&format, "format", "text", "text, hook (hook JSON) or json")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		d, err := agentCatalog(s.In).Get(args[0])
		if err != nil {
			return err
		}
		limit, err := a.contextBudget(cmd, s, format, budget)
		if err != nil {
			return err
		}
		// claude.md (for hobbs) before the memories, the learnings after
		// them: BuildContext reserves room for both before ranking.
		var pre, after []memory.Section
		if d.Name == subagent.Hobbs {
			if sec, ok, err := s.FileSection("claude.md", s.In.ClaudeMD()); err != nil {
				return err
			} else if ok {
				pre = append(pre, sec)
			}
		}
		if sec, ok, err := s.FileSection("agents/"+d.Name+"/operational.md", s.In.Operational(d.Name)); err != nil {
			return err
		} else if ok {
			after = append(after, sec)
		}
		tags := d.Tags
		if d.Name != subagent.Hobbs && len(tags) == 0 {
			a.warn("agent %s has no memory tags: it gets no memories (add tags under hobbs: in its file)", d.Name)
			tags = []string{noMemoryTag}
		}
		opt := memory.ContextOptions{Tags: tags, Budget: limit, Sections: pre, After: after, HookEvent: memory.SubagentStart}
		if d.Name == subagent.Hobbs {
			opt.HookEvent = memory.SessionStart
		}
		return a.printContext(s, opt, format)
	})
	return cmd
}
