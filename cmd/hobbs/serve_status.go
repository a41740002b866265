package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/serve"
)

func newServeStatusCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show hobbs serve's queue: runs waiting and running, deliveries shed",
		Long: `Show the run queue as hobbs serve keeps it on disk (whether it runs or
not): the runs running and waiting, in all and per trigger, with the bounds
(serve.max_queue, triggers.NAME.max_queue and per_sender), the deliveries shed
in the last hour, then each running and waiting run. docs/serve.md, Limits.`,
		Example: `  hobbs serve status
  hobbs serve status --json | jq .shed_last_hour`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withExistingInstance(func(_ *cobra.Command, _ []string, in instance.Instance) error {
		cfg, err := a.config(in)
		if err != nil {
			return err
		}
		st, problems, err := serve.ReadStatus(in, cfg, time.Now())
		for _, p := range problems {
			a.warn("%s", p)
		}
		if err != nil {
			return err
		}
		return out.print(st, func(w io.Writer) error {
			_, err := fmt.Fprintln(w, st.Text())
			return err
		})
	})
	return cmd
}
