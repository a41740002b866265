package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// newDoctorCmd runs the checks registered with doctor.Register by the
// packages this binary links: the instance and its config, the policy,
// memory, playbooks, the vault, the engine and the launcher.
func newDoctorCmd(a *app) *cobra.Command {
	var deep bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the instance, its permissions, config and the container engine",
		Long: `doctor runs every health check and prints ok, warn or fail for each, with a
one-line fix for anything not ok.

Exit status: 0 when nothing failed (warnings allowed), 3 when the only
failures are missing dependencies (the instance, the container engine,
podman's init binary, the runtime base image), 1 otherwise.

--deep also runs slow checks: it decrypts every vault entry and starts a
container from the image (or the runtime base it is built from) to check
that claude is on its PATH.`,
		Example: "  hobbs doctor\n  hobbs doctor --json\n  hobbs doctor --deep    # also slow checks (vault entries, claude in the image)",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&deep, "deep", false, "run slow checks too")
	out := a.jsonFlag(cmd, "print results as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		env := &doctor.Env{Instance: in, Deep: deep}
		env.Config, env.ConfigErr = a.config(in)
		results := doctor.Run(cmd.Context(), env)
		for i, r := range results {
			if r.Fix == "" {
				results[i].Fix = adviceText(r.Advice)
			}
		}
		err := out.print(results, func(w io.Writer) error { return doctor.WriteResults(w, results) })
		if err != nil {
			return err
		}
		line, err := doctor.Verdict(results)
		if err == nil {
			a.status("%s", line)
		}
		return err
	})
	return cmd
}
