package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
)

func newAttachCmd(a *app) *cobra.Command {
	var shell bool
	cmd := &cobra.Command{
		Use:   "attach NAME",
		Short: "Attach your terminal to a running session",
		Long: `Attach your terminal to the agent of a running session (docker attach: detach
again with Ctrl-P Ctrl-Q, which it says on a terminal). When the session
ends while attached (hobbs stop from elsewhere, or its command ends), it
says so and exits with the agent's exit code (1 for 0). A session started
on a terminal or with --detach needs one to attach to (exit 2 without;
hobbs logs and hobbs exec work from scripts). --shell opens a
new shell in the agent container instead, as the session's user, with the
same environment.`,
		Example: "  hobbs attach hobbs-3f9a2c\n  hobbs attach --shell hobbs-3f9a2c",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := a.runningSession(args[0])
			if err != nil {
				return err
			}
			if shell {
				dargs := []string{"exec", "-i", "-w", plan.WorkspaceDir}
				if a.stdinIsTTY() {
					dargs = append(dargs, "-t")
				}
				// With the session's variables (the proxy, mapped secrets),
				// which are not in the container's configuration.
				return a.passthrough(e, append(dargs, args[0], "hobbs", "session-env", "--", "/bin/sh", "-l"))
			}
			if err := launcher.CheckAttach(a.ctx, e, args[0], a.stdinIsTTY()); err != nil {
				return err
			}
			if a.stdinIsTTY() {
				a.status("%s", adviceText(errs.NewAdvice(launcher.Attached, "name", args[0])))
			}
			var code exitStatus
			if err := a.passthrough(e, []string{"attach", args[0]}); err != nil && !errors.As(err, &code) {
				return err
			}
			detached, err := launcher.AfterAttach(a.ctx, e, args[0], int(code))
			if !detached.IsZero() {
				a.status("%s", adviceText(detached))
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&shell, "shell", false, "open a new login shell in the agent container instead")
	return cmd
}
