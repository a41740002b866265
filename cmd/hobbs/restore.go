package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newRestoreCmd(a *app) *cobra.Command {
	var repo string
	var yes bool
	cmd := &cobra.Command{
		Use:   "restore [SNAPSHOT]",
		Short: "Restore the instance from a backup, verified, then swapped in",
		Long: `Restore SNAPSHOT (default: this device's newest, else the newest of any
device) into a staging directory beside the instance, check it — config.yaml
and policy.yaml parse, the memory index rebuilds, the vault opens with the
restored identity — and swap it in. The instance in place is kept beside
it as INSTANCE.before-restore-DATE, and named. If anything fails, the
instance in place is untouched and the staging directory removed.

A snapshot restic cannot restore whole (a damaged pack) is refused, naming
the last good one; a snapshot of a newer hobbs is refused, naming both
versions.

On a new machine: hobbs restore --repo REPO (it asks the repository's
password, or reads RESTIC_PASSWORD / RESTIC_PASSWORD_FILE), then hobbs run.
Claude Code's sign-in is not in a backup: the first session asks for it.

On a terminal it asks before the swap; without one it swaps only with --yes.`,
		Example: `  hobbs restore --repo /mnt/usb/hobbs-backup
  hobbs restore 4f2a9c1e
  RESTIC_PASSWORD_FILE=pw hobbs restore --repo rest:http://nas:8000/hobbs --yes`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
	}
	cmd.Flags().StringVar(&repo, "repo", "", "the repository (default: the one hobbs backup init recorded)")
	cmd.Flags().BoolVar(&yes, "yes", false, "swap without asking")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		tty := a.stdinIsTTY()
		if !yes && !tty {
			return errs.Usagef("without a terminal, restore swaps the instance only with --yes").Advise(backup.NeedsYes)
		}
		r, err := a.restoreRestic(in, repo)
		if err != nil {
			return err
		}
		st, _, _ := backup.LoadState(in)
		device := st.Device
		if device == "" {
			device = backup.Device()
		}
		snap := ""
		if len(args) == 1 {
			snap = args[0]
		}
		o := backup.RestoreOptions{Instance: in, Restic: r, Snapshot: snap, Device: device, Version: image.Version(), Passphrase: passphrase,
			Progress: func(step string) {
				if !out.json {
					a.status("restore: %s…", step)
				}
			}}
		if !yes {
			o.Confirm = func(res backup.RestoreResult) bool {
				fmt.Fprintf(a.errOut, "snapshot %s (%s, %s) restored and verified: %d memories. Replace %s with it (kept as a dated copy)? [y/N] ",
					res.Snapshot.ShortID, res.Snapshot.Device, res.Snapshot.Time.Local().Format("2006-01-02 15:04"), res.Memories, in.Root)
				line, _ := bufio.NewReader(a.in).ReadString('\n')
				return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
			}
		}
		res, err := backup.Restore(cmd.Context(), o)
		if err != nil {
			return err
		}
		if !res.Swapped {
			a.status("nothing changed")
			return nil
		}
		return out.printLine(res, res.Instance, func() {
			a.status("restored snapshot %s (%s, %s; %d memories) to %s", res.Snapshot.ShortID, res.Snapshot.Device,
				res.Snapshot.Time.Local().Format("2006-01-02 15:04"), res.Memories, res.Instance)
			if res.Previous != "" {
				a.status("the instance that was there is kept as %s", res.Previous)
			}
			a.hint("start a session with: hobbs run — Claude Code's sign-in is not in a backup, so the first session on a new machine asks you to sign in again")
		})
	})
	return cmd
}
