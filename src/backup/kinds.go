package backup

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice backup's errors and results carry; cmd/hobbs words
// them (hints_backup.go). Facts: repo (the repository), version and newer
// (hobbs versions), snapshot and good (snapshot IDs), packs (damaged pack
// IDs, joined), path (a directory), need (a size), msg (restic's words).
const (
	NoRestic        errs.Kind = "backup.no-restic"
	OldRestic       errs.Kind = "backup.old-restic"
	NotInitialised  errs.Kind = "backup.not-initialised"
	NoRepository    errs.Kind = "backup.no-repository"
	WrongPassword   errs.Kind = "backup.wrong-password"
	NoPassword      errs.Kind = "backup.no-password"
	Unreachable     errs.Kind = "backup.unreachable"
	RepoLocked      errs.Kind = "backup.repo-locked"
	NoSpace         errs.Kind = "backup.no-space"
	ResticFailed    errs.Kind = "backup.restic-failed"
	Busy            errs.Kind = "backup.busy"
	Damaged         errs.Kind = "backup.damaged"
	DamagedSnapshot errs.Kind = "backup.damaged-snapshot"
	NoGoodSnapshot  errs.Kind = "backup.no-good-snapshot"
	NewerHobbs      errs.Kind = "backup.newer-hobbs"
	NoSnapshot      errs.Kind = "backup.no-snapshot"
	NotVerified     errs.Kind = "backup.not-verified"
	NeedsYes        errs.Kind = "backup.needs-yes"
	OnTheHost       errs.Kind = "backup.on-the-host"
	// Failed and Overdue are the advice of a backup that failed or did not
	// happen when due (Notice, doctor's check).
	Failed  errs.Kind = "backup.failed"
	Overdue errs.Kind = "backup.overdue"
	// NeverBacked is doctor's advice for an instance with no backup.
	NeverBacked errs.Kind = "backup.never"
	// SyncNoOther: the repository holds no snapshot of another device;
	// SyncWhich: it holds several, and sync needs --from (fact devices).
	// SyncConflicts is the advice of a sync that left conflicts (facts
	// device, held, vault, other).
	SyncNoOther   errs.Kind = "backup.sync-no-other"
	SyncWhich     errs.Kind = "backup.sync-which"
	SyncConflicts errs.Kind = "backup.sync-conflicts"
)
