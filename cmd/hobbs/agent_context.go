package main

import (
	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/subagent"
)

func newAgentContextCmd(a *app) *cobra.Command {
	var budget int
	var format string
	var hookInput bool
	cmd := &cobra.Command{
		Use:   "context NAME [--budget CHARS] [--format text|hook|json] | context --hook-input",
		Short: "Print a sub-agent's starting context: foundation, tagged memories, learnings",
		Long: `Print what Hobbs passes to a sub-agent it delegates to: foundation.md in
full (never filtered or cut), then the active memories carrying any of the
agent's tags, best first, as many as fit the budget (default:
memory.context_budget in config.yaml), then the agent's operational learnings.

For "hobbs" itself it is the session context: claude.md and its learnings with
all active memories. --format hook prints the JSON a Claude Code SubagentStart
hook returns (SessionStart for hobbs).

--hook-input makes it that hook: it reads the agent's type from the JSON
Claude Code gives the hook on standard input and prints the hook's JSON. A
built-in agent (Explore, Plan, general-purpose) or one Hobbs does not know
gets the foundation alone. The image's managed settings run it for every
sub-agent.`,
		Example: `  hobbs agent context researcher
  hobbs agent context finance --budget 4000
  hobbs agent context reviewer --format json | jq '.memories[].id'
  echo '{"agent_type":"researcher"}' | hobbs agent context --hook-input`,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if hookInput {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		}),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if hookInput {
				format = "hook"
			}
			return memory.CheckFormat(format)
		},
	}
	cmd.Flags().BoolVar(&hookInput, "hook-input", false, "be Claude Code's SubagentStart hook: the agent's type from its JSON input")
	cmd.Flags().IntVar(&budget, "budget", 0, "characters at most (default: memory.context_budget)")
	cmd.Flags().StringVar(&format, "format", "text", "text, hook (hook JSON) or json")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		limit, err := a.contextBudget(cmd, s, format, budget)
		if err != nil {
			return err
		}
		if hookInput {
			name, err := subagent.HookAgentType(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return a.printContext(s, subagent.HookContextOptions(s, a.agents(s.In), name, limit), format)
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
