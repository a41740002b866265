package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// syncOutput is what hobbs sync --json prints.
type syncOutput struct {
	backup.SyncResult
	Backup *backup.Result `json:"backup,omitempty"`
}

func newSyncCmd(a *app) *cobra.Command {
	var from string
	var withPolicy, noBackup bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Merge another device's newest backup into this instance, then back up",
		Long: `Take the newest snapshot another device backed up to this instance's
repository (hobbs backup init REPO on each device, the same REPO), fetch
what changed of it since the last sync from that device into a staging
directory beside the instance, check what came in (all of it, as hobbs
restore does, at the first sync from a device), and merge it into this
instance; then back this instance up, so that the other device takes the
merge at its next sync.

The merge is three-way against the snapshot of that device this device
merged last (kept beside the instance): memories by meaning (both
devices' additions kept, reinforcements added up, supersessions taken);
playbooks, skills and agents line by line. What changed on both devices
and does not merge stays as it is here, and the other device's version
waits in hobbs review, naming the device; so do the changes the other
device holds for review. The first sync from a device has no base: a file
the two hold with different contents is a conflict.

Vault entries merge by name: an entry only the other device has is added
here; a name with different values on the two devices is a conflict,
reported and never overwritten. Approvals (grants) and policy.yaml travel
only with --with-policy: what one machine approved is not silently
approved on another.

A second device starts from the first's backup: hobbs restore --repo REPO
there, then hobbs backup and hobbs sync on each. See docs/backup.md.`,
		Example: `  hobbs sync
  hobbs sync --from laptop
  hobbs sync --with-policy
  hobbs sync --json --no-backup`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&from, "from", "", "the device to take from (default: the one other device in the repository)")
	cmd.Flags().BoolVar(&withPolicy, "with-policy", false, "merge policy.yaml and the approvals (grants) too")
	cmd.Flags().BoolVar(&noBackup, "no-backup", false, "do not back up after the merge")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		r, err := a.backupRestic(in, "")
		if err != nil {
			return err
		}
		st, _, _ := backup.LoadState(in)
		device := st.Device
		if device == "" {
			device = backup.Device()
		}
		res, err := backup.Sync(cmd.Context(), backup.SyncOptions{Instance: in, Restic: r, Device: device, From: from,
			Version: image.Version(), WithPolicy: withPolicy, Passphrase: passphrase, Audit: a.audit(in),
			Progress: func(step string) {
				if !out.json {
					a.status("sync: %s…", step)
				}
			}})
		if err != nil {
			return err
		}
		o := syncOutput{SyncResult: res}
		if !noBackup {
			cfg, err := a.config(in)
			if err != nil {
				return err
			}
			b, err := backup.Backup(cmd.Context(), backup.Options{Instance: in, Restic: r, Device: device, Version: image.Version(),
				Keep: cfg.Backup.Keep, Audit: a.audit(in)})
			if err != nil {
				return err
			}
			o.Backup = &b
		}
		return out.printLine(o, res.Snapshot.ShortID, func() {
			switch {
			case res.UpToDate:
				a.status("up to date with %s (snapshot %s)", res.From, res.Snapshot.ShortID)
			default:
				base := "no base: a first sync"
				if res.Base != "" {
					base = "base " + res.Base[:min(8, len(res.Base))]
				}
				a.status("merged snapshot %s of %s (%s): %d file(s) changed here, %d held for review",
					res.Snapshot.ShortID, res.From, base, len(res.Changed), len(res.Held))
				if len(res.VaultAdded) > 0 {
					a.status("vault entries taken: %s", strings.Join(res.VaultAdded, ", "))
				}
			}
			for _, p := range res.Problems {
				a.warn("%s", p)
			}
			if len(res.VaultConflicts) > 0 {
				a.warn("vault entries with different values on %s, left as they are here: %s", res.From, strings.Join(res.VaultConflicts, ", "))
			}
			if len(res.Conflicts) > 0 {
				a.warn("changed on both devices, left as they are here: %s", strings.Join(res.Conflicts, ", "))
			}
			if h := adviceText(res.Advice); h != "" {
				a.hint("%s", h)
			}
			if o.Backup != nil {
				a.status("snapshot %s of %s to %s", o.Backup.Snapshot, device, o.Backup.Repo)
			}
		})
	})
	return cmd
}
