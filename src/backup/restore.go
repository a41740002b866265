package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// RestoreOptions are what Restore needs.
type RestoreOptions struct {
	Instance instance.Instance
	Restic   *Restic // Repo and Password set
	// Snapshot is the snapshot to restore (an ID or its prefix); "": the
	// newest of Device, else the newest of any device.
	Snapshot string
	Device   string
	Version  string // this hobbs's version
	// Passphrase opens a passphrase-protected vault identity in the
	// restored instance (the check that the vault opens).
	Passphrase vault.PassphraseFunc
	// Confirm is asked, with what is about to happen, before the swap; false
	// leaves everything as it was. nil: swap.
	Confirm func(RestoreResult) bool
	Now     func() time.Time
	// Progress is told each step ("restore", "verify", "swap").
	Progress func(step string)
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	Snapshot Snapshot `json:"snapshot"`
	Instance string   `json:"instance"`
	// Previous is where the instance that was in place is kept; "" when
	// there was none.
	Previous string `json:"previous,omitempty"`
	Memories int    `json:"memories"`
	Swapped  bool   `json:"swapped"`
}

// Restore restores a snapshot into a staging directory beside the
// instance, verifies it (Verify), and swaps it in: the instance in place
// is renamed to a dated copy beside it (RestoreResult.Previous). A
// snapshot restic cannot restore whole is refused, naming the newest older
// snapshot that restores; a snapshot of a newer format or hobbs version is
// refused. On any failure the instance in place is untouched and the
// staging directory removed.
func Restore(ctx context.Context, o RestoreOptions) (res RestoreResult, err error) {
	in := o.Instance
	now, step := clock(o.Now), progress(o.Progress)
	res.Instance = in.Root
	snaps, snap, err := begin(ctx, o.Restic, "restores", o.Version, func(snaps []Snapshot) (Snapshot, error) {
		return pick(snaps, o.Snapshot, o.Device)
	})
	res.Snapshot = snap
	if err != nil {
		return res, err
	}
	staging, err := stagingDir(in, "restore")
	if err != nil {
		return res, err
	}
	defer removeStaging(staging, &err)
	step("restore")
	staged, err := restoreInto(ctx, o.Restic, snap, staging)
	if err != nil {
		if damaged(err) {
			return res, refuseDamaged(ctx, o.Restic, snaps, snap, staging, err)
		}
		return res, err
	}
	step("verify")
	sin, _ := instance.At(staged)
	n, err := Verify(sin, o.Restic.Password, o.Passphrase)
	if err != nil {
		return res, errs.Wrap(errs.Failure, err, "snapshot %s restored but does not check out; the instance in place is untouched", snap.ShortID).(*errs.Error).
			Advise(NotVerified, "snapshot", snap.ShortID)
	}
	res.Memories = n
	if o.Confirm != nil && !o.Confirm(res) {
		return res, nil
	}
	if snap.Device != o.Device {
		// The restored instance is that device's snapshot: the base of the
		// first sync from it (Sync), kept before the instance changes.
		if err := KeepBase(in, staged, snap.Device, snap.ID); err != nil {
			return res, err
		}
	}
	step("swap")
	// This machine's backup record goes with the instance in use here.
	st, had, err := LoadState(in)
	if err != nil || !had {
		st = State{}
	}
	if st.Repo == "" {
		st.Repo = o.Restic.Repo
	}
	if st.Device == "" {
		st.Device = o.Device
	}
	if snap.Device != o.Device {
		if st.Synced == nil {
			st.Synced = map[string]Synced{}
		}
		st.Synced[snap.Device] = Synced{Snapshot: snap.ID, Time: now().UTC()}
	}
	if _, err := os.Lstat(in.Root); err == nil {
		// No writer is half-way through a change of the instance as it goes.
		unlock, err := lockInstance(in)
		if err != nil {
			return res, err
		}
		defer unlock()
		res.Previous = fmt.Sprintf("%s.before-restore-%s", in.Root, now().UTC().Format("20060102-150405"))
		if err := os.Rename(in.Root, res.Previous); err != nil {
			return res, errs.Wrap(errs.Failure, err, "keep the instance in place as %s", res.Previous)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, errs.Wrap(errs.Failure, err, "%s", in.Root)
	}
	if err := os.Rename(staged, in.Root); err != nil {
		if res.Previous != "" {
			if berr := os.Rename(res.Previous, in.Root); berr != nil {
				return res, errs.Failf("swap failed (%v) and the instance could not be put back (%v): it is at %s", err, berr, res.Previous)
			}
			res.Previous = ""
		}
		return res, errs.Wrap(errs.Failure, err, "swap the restored instance in")
	}
	res.Swapped = true
	_ = updateState(in, func(s *State) { *s = st })
	audit.New(in.FS(), in.AuditLog()).Record(audit.Entry{Event: "backup.restore", Subject: snap.ShortID,
		Detail: map[string]any{"repo": o.Restic.Repo, "device": snap.Device, "previous": res.Previous}}, nil)
	return res, nil
}

// clock is now, else time.Now.
func clock(now func() time.Time) func() time.Time {
	if now != nil {
		return now
	}
	return time.Now
}

// progress tells say (nil: no one) each step.
func progress(say func(string)) func(string) {
	return func(step string) {
		if say != nil {
			say(step)
		}
	}
}

// begin is what a restore and a sync (verb, plural) do first: on the
// host, with a restic this package drives, the repository's hobbs
// snapshots listed and the one choose picks refused when of a newer
// format or hobbs than version. The snapshot chosen is returned with the
// refusal.
func begin(ctx context.Context, r *Restic, verb, version string, choose func([]Snapshot) (Snapshot, error)) ([]Snapshot, Snapshot, error) {
	if instance.InContainer() {
		return nil, Snapshot{}, errs.Usagef("%s are made on the host", verb).Advise(OnTheHost)
	}
	if _, err := r.Version(ctx); err != nil {
		return nil, Snapshot{}, err
	}
	snaps, err := List(ctx, r)
	if err != nil {
		return nil, Snapshot{}, err
	}
	snap, err := choose(snaps)
	if err != nil {
		return snaps, Snapshot{}, err
	}
	return snaps, snap, CheckVersion(snap, version)
}

// stagingDir makes a staging directory beside in (kind: restore, sync):
// host-only, on the instance's filesystem (a rename swaps it in).
func stagingDir(in instance.Instance, kind string) (string, error) {
	parent := filepath.Dir(in.Root)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", errs.Wrap(errs.Failure, err, "create %s", parent)
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(in.Root)+"."+kind+"-")
	if err != nil {
		return "", errs.Wrap(errs.Failure, err, "create a staging directory beside %s", in.Root)
	}
	return staging, nil
}

// removeStaging removes the staging directory, making a failure to the
// error *err when there was none.
func removeStaging(staging string, err *error) {
	if rerr := os.RemoveAll(staging); rerr != nil && *err == nil {
		*err = errs.Wrap(errs.Failure, rerr, "remove the staging directory %s", staging)
	}
}

// pick chooses the snapshot to restore.
func pick(snaps []Snapshot, id, device string) (Snapshot, error) {
	if len(snaps) == 0 {
		return Snapshot{}, errs.Missingf("the repository holds no hobbs snapshot").Advise(NoSnapshot)
	}
	if id != "" && id != "latest" {
		var found []Snapshot
		for _, s := range snaps {
			if strings.HasPrefix(s.ID, id) {
				found = append(found, s)
			}
		}
		switch len(found) {
		case 0:
			return Snapshot{}, errs.Usagef("no hobbs snapshot %s in the repository", id).Advise(NoSnapshot)
		case 1:
			return found[0], nil
		}
		return Snapshot{}, errs.Usagef("%s names %d snapshots; give more of its ID", id, len(found))
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		if snaps[i].Device == device {
			return snaps[i], nil
		}
	}
	return snaps[len(snaps)-1], nil
}

var semverRe = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)$`)

func semver(s string) ([3]int, bool) {
	m := semverRe.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

// CheckVersion refuses a snapshot this hobbs (of version ours) may not
// read: one of a newer Format, or made by a newer release.
func CheckVersion(s Snapshot, ours string) error {
	newer := s.Format > Format
	if a, ok := semver(s.Version); ok {
		if b, ok := semver(ours); ok && cmpVersion(a, b) > 0 {
			newer = true
		}
	}
	if !newer {
		return nil
	}
	return errs.Failf("snapshot %s was made by hobbs %s (format %d); this is hobbs %s (format %d), which cannot restore it",
		s.ShortID, s.Version, s.Format, ours, Format).Advise(NewerHobbs, "newer", s.Version, "version", ours)
}

// restoreInto restores snap into dir, verifying what restic wrote, with
// no cache (the repository's own data, as a new machine reads it). It
// returns the directory holding the instance.
func restoreInto(ctx context.Context, r *Restic, snap Snapshot, dir string) (string, error) {
	if len(snap.Paths) != 1 {
		return "", errs.Failf("snapshot %s holds %d paths, not one instance", snap.ShortID, len(snap.Paths))
	}
	nc := *r
	nc.NoCache = true
	if _, err := nc.run(ctx, "restore", snap.ID, "--target", dir, "--verify"); err != nil {
		return "", err
	}
	return stagedPath(dir, snap)
}

// stagedPath is where restic restored the instance of snap beneath dir:
// the snapshot's path, each component of it a directory restic made
// there — never a link (a snapshot made elsewhere could hold one, to move
// a directory outside the staging directory into the instance's place),
// never ".." (the path is the repository's word, not ours).
func stagedPath(dir string, snap Snapshot) (string, error) {
	p := snap.Paths[0]
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return "", errs.Failf("snapshot %s holds the path %q, not an instance directory", snap.ShortID, p)
	}
	staged := dir
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		staged = filepath.Join(staged, c)
		fi, err := os.Lstat(staged)
		if err != nil || !fi.IsDir() {
			return "", errs.Failf("snapshot %s did not restore %s as a directory (at %s)", snap.ShortID, p, c)
		}
	}
	return staged, nil
}

// damaged reports whether a failed restore met damaged data (not a
// password, a network or a full disk).
func damaged(err error) bool {
	var re *ResticError
	if !errors.As(err, &re) {
		return false
	}
	switch errs.AdviceOf(err).Kind {
	case WrongPassword, Unreachable, NoSpace, RepoLocked, NoRepository:
		return false
	}
	low := strings.ToLower(re.Stderr)
	return strings.Contains(low, "ciphertext verification failed") || strings.Contains(low, "there were") ||
		strings.Contains(low, "does not match") || strings.Contains(low, "verif") || strings.Contains(low, "not found")
}

// refuseDamaged is the error of a snapshot that did not restore whole: it
// names the newest older snapshot of the same device that does (each
// tried into a scratch directory under staging, removed after).
func refuseDamaged(ctx context.Context, r *Restic, snaps []Snapshot, bad Snapshot, staging string, cause error) error {
	good := ""
	for i := len(snaps) - 1; i >= 0 && good == ""; i-- {
		s := snaps[i]
		if !s.Time.Before(bad.Time) || s.Device != bad.Device {
			continue
		}
		scratch, err := os.MkdirTemp(staging, "try-")
		if err != nil {
			break
		}
		if _, err := restoreInto(ctx, r, s, scratch); err == nil {
			good = s.ShortID
		}
		_ = os.RemoveAll(scratch)
		if ctx.Err() != nil {
			break
		}
	}
	var re *ResticError
	errors.As(cause, &re)
	msg := fmt.Sprintf("snapshot %s does not restore whole (%s): refused; the instance in place is untouched", bad.ShortID, re.Message())
	if good == "" {
		return errs.Failf("%s; no older snapshot of %s restores either", msg, bad.Device).Advise(NoGoodSnapshot, "snapshot", bad.ShortID, "repo", r.Repo)
	}
	return errs.Failf("%s; the last good snapshot is %s", msg, good).Advise(DamagedSnapshot, "snapshot", bad.ShortID, "good", good, "repo", r.Repo)
}

// Verify checks a restored instance: config.yaml and policy.yaml parse,
// the memory index rebuilds (it returns the memories counted), and the
// vault opens with the restored identity: the entry backup-password
// decrypts (and equals password, when given), else the first entry.
func Verify(in instance.Instance, password []byte, pass vault.PassphraseFunc) (int, error) {
	if !in.Exists() {
		return 0, errs.Failf("no instance in the snapshot (no config.yaml or foundation.md)")
	}
	if _, err := config.Load(in.FS(), in.Config()); err != nil {
		return 0, err
	}
	if data, err := in.FS().ReadFile(in.Policy(), instance.MaxTextFile); err == nil {
		if _, err := policy.Parse(in.Policy(), data); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, errs.Wrap(errs.Failure, err, "read policy.yaml")
	}
	ms := memory.Open(in, nil)
	st, err := ms.Stats()
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "rebuild the memory index")
	}
	if p := ms.Problems(); len(p) > 0 {
		return 0, errs.Failf("memory: %d file(s) do not read, the first %v", len(p), p[0])
	}
	if _, err := in.FS().Lstat(in.VaultIdentity()); errors.Is(err, fs.ErrNotExist) {
		return st.Total, nil
	}
	v := vault.Open(in)
	v.Audit = nil
	v.Passphrase = pass
	entries, _, err := v.List()
	if err != nil {
		return 0, err
	}
	name := ""
	for _, e := range entries {
		if e.Name == PasswordEntry || name == "" {
			name = e.Name
		}
	}
	if name == "" {
		return st.Total, nil
	}
	val, err := v.Get(name)
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "the restored vault does not open")
	}
	if name == PasswordEntry && password != nil && string(val) != string(password) {
		return 0, errs.Failf("the restored vault's %s is not the password of this repository", PasswordEntry)
	}
	return st.Total, nil
}
