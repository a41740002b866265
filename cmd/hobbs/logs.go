package main

import (
	"errors"
	"io"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

func newLogsCmd(a *app) *cobra.Command {
	var follow, proxy bool
	var tail string
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Show the output of a running session's agent or proxy",
		Long: `Show what the agent container of a running session printed, or with --proxy
what its egress proxy printed. The proxy's decisions are also in the
instance's logs/audit.log, which outlives the session. A session started
with hobbs run --detach keeps its output after it ended: hobbs logs NAME
prints it then.`,
		Example: "  hobbs logs hobbs-3f9a2c\n  hobbs logs --proxy -f hobbs-3f9a2c",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, list, err := a.sessionEngine()
			if err != nil {
				return err
			}
			if err := launcher.FindRunning(list, args[0]); err != nil {
				// A detached session that ended: its launcher's output.
				if in, ierr := a.instance(); ierr == nil && !proxy {
					if text, ok := launcher.EndedOutput(in, args[0], tail); ok {
						a.status("session %s has ended; its output (%s):", args[0], launcher.SessionLog(in, args[0]))
						_, werr := io.WriteString(a.out, text)
						return werr
					}
				}
				return err
			}
			return a.passthrough(e, launcher.LogsArgs(args[0], proxy, follow, tail))
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following the output")
	cmd.Flags().BoolVar(&proxy, "proxy", false, "the session's proxy instead of its agent")
	cmd.Flags().StringVar(&tail, "tail", "", "only the last N lines")
	return cmd
}

// passthrough runs the engine CLI with the app's streams; its exit code
// becomes ours.
func (a *app) passthrough(e engine.CLI, args []string) error {
	c, err := e.Command(a.ctx, nil, args...)
	if err != nil {
		return err
	}
	c.Stdin, c.Stdout, c.Stderr = a.in, a.out, a.errOut
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitStatus(ee.ExitCode())
	}
	return err
}
