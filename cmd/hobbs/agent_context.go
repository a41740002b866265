package main

import (
	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/subagent"
)

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
hook returns (SessionStart for hobbs). NAME "-" is that hook, as the image's
managed settings run it for every sub-agent: the agent's type comes from the
hook's JSON on stdin; a built-in or unknown one gets the foundation alone.`,
		Example: `  hobbs agent context researcher
  hobbs agent context finance --budget 4000
  hobbs agent context reviewer --format json | jq '.memories[].id'
  echo '{"agent_type":"researcher"}' | hobbs agent context - --format hook`,
		Args: usageArgs(cobra.ExactArgs(1)),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			return memory.CheckFormat(format)
		},
	}
	cmd.Flags().IntVar(&budget, "budget", 0, "characters at most (default: memory.context_budget)")
	cmd.Flags().StringVar(&format, "format", "text", "text, hook (hook JSON) or json")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		limit, err := a.contextBudget(cmd, s, format, budget)
		if err != nil {
			return err
		}
		if args[0] == "-" {
			opt, err := subagent.HookContext(s, a.agents(s.In), cmd.InOrStdin(), limit)
			if err != nil {
				return err
			}
			return a.printContext(s, opt, format)
		}
		d, err := a.agents(s.In).Get(args[0])
		if err != nil {
			return err
		}
		opt, warn, err := subagent.ContextOptions(s, d, limit)
		if err != nil {
			return err
		}
		if warn != "" {
			a.warn("%s", warn)
		}
		return a.printContext(s, opt, format)
	})
	return cmd
}
