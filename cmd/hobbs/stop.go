package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/style"
)

func newStopCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "stop [NAME | --all]",
		Short: "Stop a session and remove its containers and networks",
		Long: `Stop a session of this instance and remove its containers and networks. The
Claude state volume and the images stay. --all stops every session of the
instance, including leftovers of a hobbs process that was killed. A hobbs run
attached to a stopped session prints "session NAME stopped by hobbs stop" and
exits 143.`,
		Example: "  hobbs stop hobbs-3f9a2c\n  hobbs stop --all",
		Args:    usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) {
				return errs.Usagef("give a session NAME or --all")
			}
			in, e, _, err := a.instanceEngine()
			if err != nil {
				return err
			}
			if all {
				names, err := launcher.StopAll(cmd.Context(), e, in)
				for _, n := range names {
					fmt.Fprintln(a.out, n)
				}
				if err == nil {
					a.status("stopped %s", style.N(len(names), "session", "sessions"))
				}
				return err
			}
			ok, err := launcher.Stop(cmd.Context(), e, in, args[0])
			if err != nil {
				return err
			}
			if !ok {
				return withHint(errs.Failf("no session %q in this instance", args[0]), "list them with: hobbs ps")
			}
			fmt.Fprintln(a.out, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "stop every session of this instance")
	return cmd
}
