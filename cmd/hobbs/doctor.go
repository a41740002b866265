package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/doctor"
	_ "github.com/hobbs-agent/hobbs/src/engine" // registers the engine check
	"github.com/hobbs-agent/hobbs/src/errs"
)

func init() { register(newDoctorCmd) }

func newDoctorCmd(a *app) *cobra.Command {
	var asJSON, deep bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the instance, its permissions, config and the container engine",
		Long: `doctor runs every health check and prints ok, warn or fail for each, with a
one-line fix for anything not ok.

Exit status: 0 when nothing failed (warnings allowed), 3 when the only
failures are missing dependencies (the container engine), 1 otherwise.`,
		Example: "  hobbs doctor\n  hobbs doctor --json\n  hobbs doctor --deep    # also slow checks (decrypt every vault entry)",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.instance()
			if err != nil {
				return err
			}
			env := &doctor.Env{Instance: in, Deep: deep}
			env.Config, env.ConfigErr = a.config(in)
			results := doctor.Run(cmd.Context(), env)
			if asJSON {
				if err := a.printJSON(results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					fmt.Fprintf(a.out, "%-4s  %-22s %s\n", r.Status, r.Check, r.Message)
					if r.Fix != "" && r.Status != doctor.OK {
						fmt.Fprintf(a.out, "      %-22s fix: %s\n", "", r.Fix)
					}
				}
			}
			ok, warn, fail, onlyMissing := doctor.Summary(results)
			if fail == 0 {
				a.status("%d ok, %d warnings", ok, warn)
				return nil
			}
			code := errs.Failure
			if onlyMissing {
				code = errs.Missing
			}
			return &errs.Error{Code: code, Msg: fmt.Sprintf("%d checks failed (%d ok, %d warnings)", fail, ok, warn)}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	cmd.Flags().BoolVar(&deep, "deep", false, "run slow checks too")
	return cmd
}
