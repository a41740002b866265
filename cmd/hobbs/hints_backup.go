package main

import (
	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// backupHints words the advice of package backup.
var backupHints = map[errs.Kind]words{
	backup.NoRestic:       say("install restic 0.14 or newer: sudo apt-get install restic (macOS: brew install restic)"),
	backup.OldRestic:      say("restic {version} is too old: install 0.14 or newer (restic self-update, or your distribution's backports)"),
	backup.NotInitialised: say("set up a repository first: hobbs backup init REPO (a path, sftp:…, s3:…, rest:…, rclone:…)"),
	backup.NoRepository:   say("check the location; make a repository there with: hobbs backup init {repo}"),
	backup.WrongPassword: say("nothing was changed; give the repository's password (RESTIC_PASSWORD_FILE, or the vault entry " +
		backup.PasswordEntry + ": hobbs vault set " + backup.PasswordEntry + ")"),
	backup.NoPassword: say("on a terminal hobbs backup init generates one; otherwise set RESTIC_PASSWORD_FILE to a file holding it " +
		"(or keep it in the vault: hobbs vault set " + backup.PasswordEntry + ")"),
	backup.Unreachable: say("check the network and the server of {repo}; nothing was changed, and a scheduled backup tries again at its next run"),
	backup.RepoLocked: say("another restic works on {repo}; wait for it, or when none runs remove the stale lock: " +
		"restic -r {repo} unlock"),
	backup.NoSpace:      say("free space where it ran out (the repository, or the disk holding the instance) and run it again"),
	backup.ResticFailed: say("restic said: {msg}; run the same with restic itself to see more (docs/backup.md)"),
	backup.Busy:         say("another process of Hobbs holds the instance's {what} lock; run hobbs backup again when it is done"),
	backup.Damaged: say("damaged pack(s): {packs}. Take a new backup now (hobbs backup: what is missing is stored again), " +
		"then see restic's repair steps (restic docs: Troubleshooting); restore from a snapshot that restores whole"),
	backup.DamagedSnapshot: say("restore the last good one: hobbs restore {good}; then check the repository: hobbs backup check --read-data"),
	backup.NoGoodSnapshot:  say("no snapshot of that device restores; hobbs backup list shows the others, hobbs backup check --read-data names the damage"),
	backup.NewerHobbs:      say("install version {newer} of Hobbs (or newer) to restore it, or pick an older snapshot (hobbs backup list)"),
	backup.NoSnapshot:      say("see the snapshots with: hobbs backup list"),
	backup.NotVerified:     say("the snapshot's files are not a working instance; try an older one (hobbs backup list)"),
	backup.NeedsYes:        say("hobbs restore --yes replaces the instance (the one in place is kept as a dated copy)"),
	backup.OnTheHost:       say("run it on the host"),
	backup.Failed:          say("see why with hobbs doctor; run hobbs backup by hand to retry"),
	backup.Overdue:         say("check the schedule (hobbs schedule list) and run hobbs backup by hand"),
	backup.NeverBacked:     say("take the first snapshot: hobbs backup"),
	backup.SyncNoOther: say("back up the other device first (hobbs backup there, to this repository); " +
		"hobbs backup list shows each snapshot's device"),
	backup.SyncWhich: say("name the device to take from: hobbs sync --from DEVICE (one of {devices})"),
	backup.SyncConflicts: say("what {device} changed that did not merge waits in hobbs review ({held} item(s)); " +
		"the rest named above stays as it is here: settle it by hand (docs/backup.md, A second device)"),
}
