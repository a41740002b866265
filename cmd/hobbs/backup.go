package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/vault"
)

func newBackupCmd(a *app) *cobra.Command {
	var scheduled bool
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Take an encrypted snapshot of the instance with restic",
		Long: `Take a snapshot of the instance in the restic repository set up with
'hobbs backup init REPO', then apply the retention of config.yaml
(backup.keep: daily, weekly, monthly; per device).

A snapshot holds the whole instance but what is derived or this machine's
own (the memory index, the locks, the backup record); the vault stays
age-encrypted inside restic's encryption. While restic reads, hobbs holds
the instance's locks, so a change in progress is either whole in the
snapshot or not in it. Each snapshot is tagged with the device and the
hobbs version.

The password comes from the vault entry backup-password, or from
RESTIC_PASSWORD / RESTIC_PASSWORD_FILE when set. restic (0.14 or newer)
must be installed: sudo apt-get install restic.

A failed backup is recorded: the next hobbs command on the host says so,
hobbs serve delivers it, hobbs doctor shows it until a backup succeeds.
See docs/backup.md.`,
		Example: `  hobbs backup init /mnt/usb/hobbs-backup
  hobbs backup
  hobbs backup list
  hobbs backup check --read-data
  hobbs backup schedule --every 24h
  hobbs restore --repo /mnt/usb/hobbs-backup`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&scheduled, "scheduled", false, "run as the scheduler does (no progress)")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		r, err := a.backupRestic(in, "")
		if err != nil {
			a.recordBackupFailure(in, err)
			return err
		}
		cfg, err := a.config(in)
		if err != nil {
			a.recordBackupFailure(in, err)
			return err
		}
		st, _, _ := backup.LoadState(in)
		device := st.Device
		if device == "" {
			device = backup.Device()
		}
		o := backup.Options{Instance: in, Restic: r, Device: device, Version: image.Version(), Keep: cfg.Backup.Keep, Audit: a.audit(in)}
		if !scheduled && !out.json {
			last := time.Time{}
			o.Progress = func(p backup.Progress) {
				if time.Since(last) < time.Second || p.TotalFiles == 0 {
					return
				}
				last = time.Now()
				a.status("backup: %3.0f%%  %d/%d files", p.Percent*100, p.FilesDone, p.TotalFiles)
			}
		}
		res, err := backup.Backup(cmd.Context(), o)
		if err != nil {
			return err
		}
		return out.printLine(res, res.Snapshot, func() {
			a.status("snapshot %s of %s to %s: %d new, %d changed, %d unchanged files, %s added",
				res.Snapshot, device, res.Repo, res.FilesNew, res.FilesMod, res.FilesSame, safefile.FormatSize(res.Added))
			if len(res.Forgotten) > 0 {
				pruned := "their data goes at the next prune (weekly)"
				if res.Pruned {
					pruned = "pruned the data no snapshot uses"
				}
				a.status("retention: forgot %d snapshot(s); %s", len(res.Forgotten), pruned)
			}
		})
	})
	cmd.AddCommand(newBackupInitCmd(a), newBackupListCmd(a), newBackupCheckCmd(a), newBackupScheduleCmd(a))
	return cmd
}

// recordBackupFailure records a backup that failed before restic ran (no
// password, no repository), so that it reaches the owner as one that
// failed in restic does.
func (a *app) recordBackupFailure(in instance.Instance, err error) {
	_ = backup.RecordFailure(in, time.Now(), err)
}

// backupRestic is the restic of in's repository (repo: the flag, else the
// one recorded), with its password.
func (a *app) backupRestic(in instance.Instance, repo string) (*backup.Restic, error) {
	if repo == "" {
		var err error
		if repo, err = backup.Repo(in); err != nil {
			return nil, err
		}
	}
	v := vault.Open(in)
	v.Passphrase = passphrase
	v.AuditFailed = func(err error) { a.warn("audit log not written: %v", err) }
	pw, err := backup.Password(v)
	if err != nil {
		return nil, err
	}
	return &backup.Restic{Repo: repo, Password: pw}, nil
}

func newBackupInitCmd(a *app) *cobra.Command {
	var device string
	cmd := &cobra.Command{
		Use:   "init REPO",
		Short: "Make (or join) the restic repository backups go to",
		Long: `Make the restic repository REPO, or join it when it exists and the password
opens it. REPO is anything restic takes: a path, sftp:user@host:/path,
s3:…, rest:https://…, rclone:remote:path.

On a terminal a password is generated, kept in the vault as the entry
backup-password, and printed once on stdout: keep it somewhere else too
(a password manager, paper) — a new machine needs it to restore, and
without it the backups cannot be read. Without a terminal the password is
read from RESTIC_PASSWORD or RESTIC_PASSWORD_FILE, as restic does, and kept
in the vault the same way.

The repository and the device name (--device, default the host name) are
recorded for this machine.`,
		Example: `  hobbs backup init /mnt/usb/hobbs-backup
  hobbs backup init sftp:me@nas:/srv/backup/hobbs --device laptop
  RESTIC_PASSWORD_FILE=~/.restic-pw hobbs backup init rest:http://nas:8000/hobbs`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&device, "device", "", "this machine's name in the repository (default: the host name)")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
		if device == "" {
			device = backup.Device()
		}
		pw, err := backup.PasswordFromEnv()
		if err != nil {
			return err
		}
		generated := false
		if pw == nil {
			if !a.stdinIsTTY() {
				return errs.Usagef("no password: without a terminal, set RESTIC_PASSWORD or RESTIC_PASSWORD_FILE").Advise(backup.NoPassword)
			}
			if pw, err = backup.GeneratePassword(); err != nil {
				return err
			}
			generated = true
		}
		r := &backup.Restic{Repo: args[0], Password: pw}
		res, err := backup.Init(cmd.Context(), backup.InitOptions{Instance: v.In, Restic: r, Vault: v, Device: device, Audit: a.audit(v.In)})
		if err != nil {
			return err
		}
		verb := "made"
		if !res.Created {
			verb = "joined"
		}
		if out.json {
			return a.printJSON(res)
		}
		a.status("%s the restic repository %s as device %s; its password is in the vault (%s)", verb, res.Repo, device, backup.PasswordEntry)
		if generated {
			fmt.Fprintf(a.rawOut, "%s\n", pw)
			a.hint("this is the repository's password, shown once: keep it somewhere else too (a password manager, paper) — " +
				"a new machine needs it to restore; lose it and the backups cannot be read")
		}
		a.hint("take the first snapshot: hobbs backup; then schedule them: hobbs backup schedule --every 24h")
		return nil
	})
	return cmd
}

func newBackupListCmd(a *app) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the hobbs snapshots in the repository",
		Long:    `List the snapshots hobbs made in the repository (every device's), oldest first.`,
		Example: "  hobbs backup list\n  hobbs backup list --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&repo, "repo", "", "the repository (default: the one hobbs backup init recorded)")
	out := a.jsonFlag(cmd, "print the snapshots as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		r, err := a.restoreRestic(in, repo)
		if err != nil {
			return err
		}
		snaps, err := backup.List(cmd.Context(), r)
		if err != nil {
			return err
		}
		return printTable(out, snaps, "no hobbs snapshots in "+r.Repo, "ID\tTIME\tDEVICE\tHOBBS", func(s backup.Snapshot) string {
			return s.ShortID + "\t" + s.Time.Local().Format("2006-01-02 15:04:05") + "\t" + s.Device + "\t" + orDash(s.Version)
		})
	})
	return cmd
}

func newBackupCheckCmd(a *app) *cobra.Command {
	var readData bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the repository's integrity (restic check)",
		Long: `Check the repository's structure; with --read-data read and verify every
pack (slow: it downloads the whole repository). A damaged pack is named.`,
		Example: "  hobbs backup check\n  hobbs backup check --read-data",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&readData, "read-data", false, "read and verify all data")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		r, err := a.backupRestic(in, "")
		if err != nil {
			return err
		}
		if !out.json {
			a.status("checking %s…", r.Repo)
		}
		res, err := backup.Check(cmd.Context(), r, readData)
		if err != nil {
			if out.json && len(res.Damaged) > 0 {
				_ = a.printJSON(res)
			}
			return err
		}
		what := "structure"
		if readData {
			what = "structure and data"
		}
		return out.printLine(res, "ok", func() { a.status("%s: %s intact", r.Repo, what) })
	})
	return cmd
}

func newBackupScheduleCmd(a *app) *cobra.Command {
	var every string
	var rm bool
	cmd := &cobra.Command{
		Use:   "schedule --every DURATION | --rm",
		Short: "Back up on a schedule (systemd timer or cron, as playbooks)",
		Long: `Run 'hobbs backup --scheduled' every DURATION on the scheduler hobbs schedule
uses for playbooks (a systemd user timer, or cron). A backup that fails or
does not happen within the interval is told: the next hobbs command on the
host says so, hobbs serve delivers it, and hobbs doctor flags a last good
backup older than twice the interval. --rm removes the schedule.`,
		Example: "  hobbs backup schedule --every 24h\n  hobbs backup schedule --rm",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&every, "every", "", "interval, a Go duration (24h)")
	cmd.Flags().BoolVar(&rm, "rm", false, "remove the backup schedule")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		o := schedule.OptionsFromEnv(a.audit(in))
		if rm {
			backend, removed, err := schedule.RemoveBackup(o)
			if err != nil {
				return err
			}
			if !removed {
				return errs.Failf("no backup schedule (%s)", backend).Advise(schedule.NotScheduled)
			}
			a.status("removed the backup schedule (%s)", backend)
			return backup.SetEvery(in, 0)
		}
		if _, err := backup.Repo(in); err != nil {
			return err
		}
		spec, err := schedule.ParseSpec(every, "")
		if err != nil {
			return err
		}
		res, err := schedule.AddBackup(o, in.Root, spec)
		if err != nil {
			return err
		}
		if err := backup.SetEvery(in, spec.Every); err != nil {
			return err
		}
		a.status("backup scheduled %s (%s); next run %s", spec, res.Backend, orDash(res.Next))
		return nil
	})
	return cmd
}

// warnBackup tells, once, a backup of the instance that failed or is
// overdue (backup.Tell).
func (a *app) warnBackup() {
	in, err := a.instance()
	if err != nil {
		return
	}
	if al, ok := backup.Tell(in, time.Now(), ""); ok {
		a.warn("%s (%s)", al.Line, adviceText(al.Advice))
	}
}

// restoreRestic is the restic of repo (else the instance's), with its
// password: from the environment, else the vault when the instance has
// one, else asked on the terminal.
func (a *app) restoreRestic(in instance.Instance, repo string) (*backup.Restic, error) {
	if repo == "" {
		if !in.Exists() {
			return nil, errs.Usagef("no instance at %s: name the repository with --repo", in.Root).Advise(backup.NotInitialised)
		}
		var err error
		if repo, err = backup.Repo(in); err != nil {
			return nil, err
		}
	}
	pw, err := backup.PasswordFromEnv()
	if err != nil {
		return nil, err
	}
	if pw == nil && in.Exists() {
		v := vault.Open(in)
		v.Passphrase = passphrase
		if p, err := backup.Password(v); err == nil {
			pw = p
		}
	}
	if pw == nil {
		p, err := askPassphrase("Password of "+repo, false)
		if errors.Is(err, vault.ErrNoTerminal) {
			return nil, errs.Usagef("no password for %s: without a terminal, set RESTIC_PASSWORD or RESTIC_PASSWORD_FILE", repo).Advise(backup.NoPassword)
		}
		if err != nil {
			return nil, err
		}
		pw = p
	}
	return &backup.Restic{Repo: repo, Password: pw}, nil
}
