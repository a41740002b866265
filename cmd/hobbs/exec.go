package main

import (
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/spf13/cobra"
)

func newExecCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec NAME -- COMMAND [ARG...]",
		Short: "Run a command in a running session's agent container",
		Long: `Run COMMAND in the agent container of a running session, as the session's
user, in the workspace, with the session's variables (the proxy, secrets as
the session has them): what the agent could run itself. Its exit code is
hobbs exec's. A terminal is passed on when you are on one.`,
		Example: `  hobbs exec work -- hobbs memory list
  hobbs exec work -- sh -c 'ls ~/hobbs/workspace'
  hobbs exec work -- claude -p "what are you working on?"`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := a.runningSession(args[0])
			if err != nil {
				return err
			}
			dargs := []string{"exec", "-i", "-w", plan.WorkspaceDir}
			if a.onTerminal() {
				dargs = append(dargs, "-t")
			}
			dargs = append(dargs, args[0], "hobbs", "session-env", "--")
			return a.passthrough(e, append(dargs, args[1:]...))
		},
	}
	return cmd
}
