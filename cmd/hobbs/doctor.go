package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/style"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// doctorChecks are hobbs doctor's checks, in the order of its report. Each
// is a function of the package that owns what it checks; the name is the
// check's stable identifier, in the report and its JSON.
var doctorChecks = []doctor.Check{
	{Name: "instance.layout", Run: doctor.InstanceLayout},
	{Name: "instance.files", Run: doctor.InstanceFiles},
	{Name: "instance.foundation", Run: doctor.InstanceFoundation},
	{Name: "instance.quarantine", Run: doctor.InstanceQuarantine},
	{Name: "instance.permissions", Run: doctor.InstancePermissions},
	{Name: "config", Run: doctor.Config},
	{Name: "policy", Run: egress.DoctorPolicy},
	{Name: "memory", Run: memory.Doctor},
	{Name: "vault.keys", Run: vault.DoctorKeys},
	{Name: "memory.context", Run: memory.DoctorContext},
	{Name: "vault.entries", Run: vault.DoctorEntries},
	{Name: "vault.mapped", Run: vault.DoctorMapped},
	{Name: "vault.env", Run: vault.DoctorEnv},
	{Name: "engine", Run: engine.Doctor},
	{Name: "engine.version", Run: launcher.DoctorVersion},
	{Name: "engine.init", Run: launcher.DoctorInit},
	{Name: "engine.layers", Run: launcher.DoctorLayers},
	{Name: "image", Run: launcher.DoctorImage},
	{Name: "playbooks", Run: playbook.Doctor},
	{Name: "schedules", Run: schedule.Doctor},
	{Name: "backup", Run: backup.Doctor},
}

// newDoctorCmd runs doctorChecks and prints their results.
func newDoctorCmd(a *app) *cobra.Command {
	var deep bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the instance, its permissions, config and the container engine",
		Long: `doctor runs every health check and prints ok, warn or fail for each, with a
one-line fix for anything not ok.

Exit status: 0 when nothing failed (warnings allowed), 3 when the only
failures are missing dependencies (the instance, the container engine,
podman's init binary, the runtime base image, Claude Code in the image),
1 otherwise. An image whose build found no claude in its base fails the
image check.

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
		results := doctor.Run(cmd.Context(), env, doctorChecks)
		rows := doctorRows(results, in)
		err := out.print(rows, func(w io.Writer) error { return writeDoctorRows(w, rows) })
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

// doctorRow is a result as doctor prints it (and its JSON): the advice
// worded as the fix.
type doctorRow struct {
	Check   string        `json:"check"`
	Status  doctor.Status `json:"status"`
	Message string        `json:"message"`
	Fix     string        `json:"fix,omitempty"`
	Missing bool          `json:"missing_dependency,omitempty"`
}

func doctorRows(rs []doctor.Result, in instance.Instance) []doctorRow {
	var out []doctorRow
	for _, r := range rs {
		if r.Advice.Kind == doctor.NoInstance || r.Advice.Kind == doctor.LayoutIncomplete {
			r.Advice = errs.NewAdvice(r.Advice.Kind, "init", initCommand(in))
		}
		out = append(out, doctorRow{Check: r.Check, Status: r.Status, Message: r.Message, Fix: adviceText(r.Advice), Missing: r.Missing})
	}
	return out
}

// doctorStyles colour a result's status on a terminal.
var doctorStyles = map[doctor.Status]style.Kind{doctor.OK: style.OK, doctor.Warn: style.Warn, doctor.Fail: style.Fail}

// writeDoctorRows prints results for a reader, a line each: status (in its
// colour on a terminal), check and message in columns, and under anything
// not ok its fix.
func writeDoctorRows(w io.Writer, rows []doctorRow) error {
	for _, r := range rows {
		style.Fprint(w, doctorStyles[r.Status], fmt.Sprintf("%-4s", r.Status))
		fmt.Fprintf(w, "  %-22s %s\n", r.Check, r.Message)
		if r.Fix != "" && r.Status != doctor.OK {
			fmt.Fprintf(w, "      %-22s fix: %s\n", "", r.Fix)
		}
	}
	return nil
}
