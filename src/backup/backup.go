package backup

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// PasswordEntry is the vault entry holding the repository's password.
const PasswordEntry = "backup-password"

// Format is the layout of the instance a snapshot holds, tagged on it
// (hobbs-format:N): a hobbs that reads an older format restores it; a
// snapshot of a newer format is refused (Restore).
const Format = 1

// Tag marks the snapshots hobbs makes; the others in a shared repository
// are not listed, forgotten or restored.
const Tag = "hobbs"

// Tag prefixes of the facts a snapshot carries.
const (
	tagDevice  = "device:"
	tagVersion = "hobbs-version:"
	tagFormat  = "hobbs-format:"
)

// LockTimeout is how long Backup waits for each of the instance's locks
// (a memory write, a vault change in progress) before it gives up.
var LockTimeout = 30 * time.Second

// GeneratePassword returns a new repository password: 32 random bytes,
// base64url without padding (43 characters).
func GeneratePassword() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "generate a password")
	}
	return []byte(base64.RawURLEncoding.EncodeToString(b)), nil
}

// PasswordFromEnv reads the password restic itself would: RESTIC_PASSWORD,
// else the file RESTIC_PASSWORD_FILE names (its first line). nil when
// neither is set.
func PasswordFromEnv() ([]byte, error) {
	if p := os.Getenv("RESTIC_PASSWORD"); p != "" {
		return []byte(p), nil
	}
	f := os.Getenv("RESTIC_PASSWORD_FILE")
	if f == "" {
		return nil, nil
	}
	b, err := safefile.Beneath(filepath.Dir(f)).ReadFile(filepath.Base(f), 64<<10)
	if err != nil {
		return nil, errs.Wrap(errs.Usage, err, "RESTIC_PASSWORD_FILE")
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return nil, errs.Usagef("RESTIC_PASSWORD_FILE %s is empty", f)
	}
	return []byte(line), nil
}

// Password is the repository's password for this instance: from the
// environment (PasswordFromEnv) when set, else the vault entry
// backup-password.
func Password(v *vault.Vault) ([]byte, error) {
	if p, err := PasswordFromEnv(); p != nil || err != nil {
		return p, err
	}
	p, err := v.Get(PasswordEntry)
	if errors.Is(err, vault.ErrNotFound) {
		return nil, errs.Missingf("no backup password: the vault has no entry %s and RESTIC_PASSWORD is not set", PasswordEntry).
			Advise(NoPassword)
	}
	return p, err
}

var deviceRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckDevice refuses a device name restic's tags and hosts cannot carry
// as one word (a comma splits a tag).
func CheckDevice(name string) error {
	if !deviceRe.MatchString(name) {
		return errs.Usagef("device name %q: use 1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	return nil
}

// InitOptions are what Init needs.
type InitOptions struct {
	Instance instance.Instance
	Restic   *Restic // Repo and Password set
	Vault    *vault.Vault
	Device   string
	Audit    *audit.Logger
}

// InitResult says what Init did.
type InitResult struct {
	Created bool   `json:"created"` // false: joined an existing repository
	Repo    string `json:"repo"`
	Device  string `json:"device"`
	// Stored is true when the password was put in the vault (it was not
	// there with the same value).
	Stored bool `json:"stored"`
}

// Init makes the repository o.Restic names (or joins it when it exists and
// the password opens it), keeps the password in the vault entry
// backup-password, and records the repository and device for this
// machine.
func Init(ctx context.Context, o InitOptions) (res InitResult, err error) {
	res = InitResult{Repo: o.Restic.Repo, Device: o.Device}
	defer func() {
		o.Audit.Record(audit.Entry{Event: "backup.init", Subject: o.Restic.Repo, Detail: map[string]any{"created": res.Created, "device": o.Device}}, err)
	}()
	if instance.InContainer() {
		return res, errs.Usagef("backups are made on the host").Advise(OnTheHost)
	}
	if err := CheckDevice(o.Device); err != nil {
		return res, err
	}
	if _, err := o.Restic.Version(ctx); err != nil {
		return res, err
	}
	_, err = o.Restic.run(ctx, "init")
	switch {
	case err == nil:
		res.Created = true
	case errors.Is(err, ErrExists):
		// Join it: the password must open it.
		if _, err := o.Restic.run(ctx, "cat", "config"); err != nil {
			return res, err
		}
	default:
		return res, err
	}
	old, gerr := o.Vault.Get(PasswordEntry)
	if gerr != nil || string(old) != string(o.Restic.Password) {
		if _, err := o.Vault.Set(PasswordEntry, o.Restic.Password); err != nil {
			return res, err
		}
		res.Stored = true
	}
	// What this device has in the repository: none in a new one.
	kept, known := []Kept{}, res.Created
	if !res.Created {
		if snaps, err := List(ctx, o.Restic); err == nil {
			for _, s := range snaps {
				if s.Host == o.Device {
					kept = append(kept, Kept{ID: s.ShortID, Time: s.Time})
				}
			}
			known = true
		}
	}
	return res, updateState(o.Instance, func(s *State) {
		s.Repo, s.Device, s.Kept, s.Known = o.Restic.Repo, o.Device, kept, known
		if s.Pruned.IsZero() {
			s.Pruned = time.Now().UTC()
		}
	})
}

// Options are what Backup needs.
type Options struct {
	Instance instance.Instance
	Restic   *Restic
	Device   string
	Version  string // this hobbs's version, tagged on the snapshot
	Keep     config.BackupKeep
	Audit    *audit.Logger
	// Progress is told how far the backup is, from restic's status lines.
	Progress func(Progress)
	Now      func() time.Time
}

// Progress is a restic status line.
type Progress struct {
	Percent    float64 `json:"percent_done"`
	TotalFiles int     `json:"total_files"`
	FilesDone  int     `json:"files_done"`
	TotalBytes int64   `json:"total_bytes"`
	BytesDone  int64   `json:"bytes_done"`
}

// Result is what a backup made.
type Result struct {
	Snapshot   string   `json:"snapshot"`
	FilesNew   int      `json:"files_new"`
	FilesMod   int      `json:"files_changed"`
	FilesSame  int      `json:"files_unmodified"`
	Added      int64    `json:"data_added"`
	Bytes      int64    `json:"total_bytes_processed"`
	Seconds    float64  `json:"total_duration"`
	Forgotten  []string `json:"forgotten"`
	Pruned     bool     `json:"pruned"`
	Repo       string   `json:"repo"`
	Device     string   `json:"device"`
	HobbsVersn string   `json:"hobbs_version"`
}

// lockedResources are the instance's locks a backup holds while restic
// reads the instance, in this order: every writer of those parts takes one
// of them, so a snapshot holds each part as one writer left it, never half
// of a change.
var lockedResources = []string{"memory", "playbooks", "agents", "tasks", "vault", "policy", "grants", "foundation", "chat"}

func lockRes(in instance.Instance, name string) (func(), error) {
	p := in.Lock(name)
	if err := in.FS().MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create %s", in.Rel(filepath.Dir(p)))
	}
	unlock, err := in.FS().Lock(p, LockTimeout)
	if errors.Is(err, safefile.ErrLockTimeout) {
		return nil, errs.Failf("the instance is busy: %s is held by another process", in.Rel(p)).Advise(Busy, "what", name)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "lock %s", name)
	}
	return unlock, nil
}

// lockInstance takes every lock of lockedResources whose directory exists.
func lockInstance(in instance.Instance) (func(), error) {
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	for _, name := range lockedResources {
		dir := filepath.Dir(in.Lock(name))
		if dir != in.Locks() {
			if fi, err := in.FS().Lstat(dir); err != nil || !fi.IsDir() {
				continue // a shared part the instance does not have
			}
		}
		u, err := lockRes(in, name)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, u)
	}
	return release, nil
}

// globEscape escapes what restic's exclude patterns read as a pattern.
func globEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(p)
}

// NotInitialisedError is the error of a command on an instance without a
// repository.
func notInitialised(in instance.Instance) error {
	return errs.Missingf("no backup repository for %s", in.Root).Advise(NotInitialised)
}

// Repo returns the repository recorded for in (by Init or Restore).
func Repo(in instance.Instance) (string, error) {
	st, _, err := LoadState(in)
	if err != nil {
		return "", err
	}
	if st.Repo == "" {
		return "", notInitialised(in)
	}
	return st.Repo, nil
}

// Backup takes a snapshot of o.Instance (without instance.BackupExcludes
// and stray temporary files), tagged with the device, the hobbs version
// and the format, while holding the instance's locks; then applies the
// retention o.Keep to this device's snapshots. The outcome is recorded in
// the machine's backup record and the audit log.
func Backup(ctx context.Context, o Options) (res Result, err error) {
	in := o.Instance
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	res = Result{Repo: o.Restic.Repo, Device: o.Device, HobbsVersn: o.Version}
	start := now()
	defer func() {
		run := &Run{Time: start.UTC(), Snapshot: res.Snapshot}
		if err != nil {
			run.Error = strings.SplitN(err.Error(), "\n", 2)[0]
		}
		_ = updateState(in, func(s *State) {
			s.Last = run
			if err == nil {
				s.LastOK = run
			}
			if s.Device == "" {
				s.Device = o.Device
			}
		})
		o.Audit.Record(audit.Entry{Event: "backup.snapshot", Subject: res.Snapshot,
			Detail: map[string]any{"repo": o.Restic.Repo, "device": o.Device, "forgotten": len(res.Forgotten)}}, err)
	}()
	if instance.InContainer() {
		return res, errs.Usagef("backups are made on the host").Advise(OnTheHost)
	}
	if !in.Exists() {
		return res, errs.Missingf("no Hobbs instance at %s", in.Root)
	}
	if err := CheckDevice(o.Device); err != nil {
		return res, err
	}
	args := []string{"backup", "--json", "--host", o.Device, "--tag", Tag,
		"--tag", tagDevice + o.Device, "--tag", tagVersion + o.Version, "--tag", tagFormat + strconv.Itoa(Format),
		"--exclude", ".tmp-*"}
	for _, p := range in.BackupExcludes() {
		args = append(args, "--exclude", globEscape(p))
	}
	args = append(args, in.Root)
	unlock, err := lockInstance(in)
	if err != nil {
		return res, err
	}
	var summary Result
	var seen bool
	err = o.Restic.stream(ctx, func(line []byte) {
		var m struct {
			Type string `json:"message_type"`
		}
		if json.Unmarshal(line, &m) != nil {
			return
		}
		switch m.Type {
		case "status":
			var p Progress
			if json.Unmarshal(line, &p) == nil && o.Progress != nil {
				o.Progress(p)
			}
		case "summary":
			var s struct {
				Result
				ID string `json:"snapshot_id"`
			}
			if json.Unmarshal(line, &s) == nil {
				summary, seen = s.Result, true
				summary.Snapshot = s.ID
			}
		}
	}, args...)
	unlock()
	if seen {
		summary.Repo, summary.Device, summary.HobbsVersn = res.Repo, res.Device, res.HobbsVersn
		res = summary
	}
	if err != nil {
		return res, err
	}
	if !seen || res.Snapshot == "" {
		return res, errs.Failf("restic backup ended without naming its snapshot").Advise(ResticFailed, "msg", "no summary")
	}
	st, _, _ := LoadState(in)
	// restic dates the snapshot when it starts, just after start.
	kept := append(append([]Kept{}, st.Kept...), Kept{ID: res.Snapshot, Time: start})
	if st.Known && len(expired(kept, o.Keep)) == 0 {
		// Nothing to forget: restic is not asked (opening the repository
		// again costs its key derivation).
		res.Forgotten = []string{}
		return res, updateState(in, func(s *State) { s.Kept, s.Known = kept, true })
	}
	prune := !now().Before(st.Pruned.Add(PruneEvery))
	res.Forgotten, kept, err = forget(ctx, o.Restic, o.Device, o.Keep, prune)
	if err != nil {
		return res, err
	}
	res.Pruned = prune && len(res.Forgotten) > 0
	return res, updateState(in, func(s *State) {
		s.Kept, s.Known = kept, kept != nil
		if res.Pruned {
			s.Pruned = now().UTC()
		}
	})
}

// expired returns the snapshots of kept that keep would forget: restic's
// policy (newest first, the first snapshot of each of the last Daily days,
// Weekly ISO weeks, Monthly months in local time is kept). All zero keeps
// all.
func expired(kept []Kept, keep config.BackupKeep) []Kept {
	if keep.Daily == 0 && keep.Weekly == 0 && keep.Monthly == 0 {
		return nil
	}
	s := append([]Kept{}, kept...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Time.After(s[j].Time) })
	type bucket struct {
		n    int
		last int
		of   func(time.Time) int
	}
	bs := []*bucket{
		{keep.Daily, -1, func(t time.Time) int { return t.Year()*10000 + int(t.Month())*100 + t.Day() }},
		{keep.Weekly, -1, func(t time.Time) int { y, w := t.ISOWeek(); return y*100 + w }},
		{keep.Monthly, -1, func(t time.Time) int { return t.Year()*100 + int(t.Month()) }},
	}
	var out []Kept
	for _, k := range s {
		keepIt := false
		for _, b := range bs {
			if b.n > 0 {
				if v := b.of(k.Time.Local()); v != b.last {
					keepIt, b.last = true, v
					b.n--
				}
			}
		}
		if !keepIt {
			out = append(out, k)
		}
	}
	return out
}

// PruneEvery is how often Backup prunes: the retention forgets snapshots
// after every backup, but removing the data no snapshot uses any more
// reads every remaining snapshot's trees and may rewrite packs, so it is
// done at most this often (and only when a snapshot was forgotten).
const PruneEvery = 7 * 24 * time.Hour

// forget applies keep to the device's hobbs snapshots, with prune
// removing what no snapshot uses any more; it returns the IDs forgotten
// and the snapshots kept.
func forget(ctx context.Context, r *Restic, device string, keep config.BackupKeep, prune bool) ([]string, []Kept, error) {
	if keep.Daily == 0 && keep.Weekly == 0 && keep.Monthly == 0 {
		snaps, err := List(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		kept := []Kept{}
		for _, s := range snaps {
			if s.Host == device {
				kept = append(kept, Kept{ID: s.ShortID, Time: s.Time})
			}
		}
		return []string{}, kept, nil
	}
	args := []string{"forget", "--json", "--tag", Tag, "--host", device}
	if prune {
		args = append(args, "--prune")
	}
	for flag, n := range map[string]int{"--keep-daily": keep.Daily, "--keep-weekly": keep.Weekly, "--keep-monthly": keep.Monthly} {
		if n > 0 {
			args = append(args, flag, strconv.Itoa(n))
		}
	}
	out, err := r.run(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	gone, kept := []string{}, []Kept{}
	// The JSON is on one line; prune's report, when it prunes, follows.
	for _, line := range strings.Split(string(out), "\n") {
		type snap struct {
			ShortID string    `json:"short_id"`
			Time    time.Time `json:"time"`
		}
		var groups []struct {
			Keep   []snap `json:"keep"`
			Remove []snap `json:"remove"`
		}
		if json.Unmarshal([]byte(line), &groups) != nil {
			continue
		}
		for _, g := range groups {
			for _, s := range g.Remove {
				gone = append(gone, s.ShortID)
			}
			for _, s := range g.Keep {
				kept = append(kept, Kept{ID: s.ShortID, Time: s.Time})
			}
		}
	}
	return gone, kept, nil
}

// Snapshot is one hobbs snapshot in the repository.
type Snapshot struct {
	ID      string    `json:"id"`
	ShortID string    `json:"short_id"`
	Time    time.Time `json:"time"`
	Host    string    `json:"hostname"`
	Tags    []string  `json:"tags"`
	Paths   []string  `json:"paths"`
	Device  string    `json:"device"`
	Version string    `json:"hobbs_version"`
	Format  int       `json:"format"`
}

func (s *Snapshot) readTags() {
	for _, t := range s.Tags {
		switch {
		case strings.HasPrefix(t, tagDevice):
			s.Device = strings.TrimPrefix(t, tagDevice)
		case strings.HasPrefix(t, tagVersion):
			s.Version = strings.TrimPrefix(t, tagVersion)
		case strings.HasPrefix(t, tagFormat):
			s.Format, _ = strconv.Atoi(strings.TrimPrefix(t, tagFormat))
		}
	}
	if s.Device == "" {
		s.Device = s.Host
	}
}

// List returns the hobbs snapshots of the repository, oldest first.
func List(ctx context.Context, r *Restic) ([]Snapshot, error) {
	out, err := r.run(ctx, "snapshots", "--json", "--tag", Tag)
	if err != nil {
		return nil, err
	}
	var snaps []Snapshot
	if err := json.Unmarshal(out, &snaps); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read restic snapshots --json")
	}
	for i := range snaps {
		snaps[i].readTags()
	}
	sort.SliceStable(snaps, func(i, j int) bool { return snaps[i].Time.Before(snaps[j].Time) })
	return snaps, nil
}

// CheckResult is what Check found.
type CheckResult struct {
	ReadData bool     `json:"read_data"`
	OK       bool     `json:"ok"`
	Damaged  []string `json:"damaged_packs"`
	Message  string   `json:"message,omitempty"`
}

var packRe = regexp.MustCompile(`(?i)(?:pack(?: id does not match, want)?|want) ([0-9a-f]{8,64})`)

// Check runs restic check (with readData, reading every pack). A damaged
// repository is an error with advice Damaged naming the damaged packs.
func Check(ctx context.Context, r *Restic, readData bool) (CheckResult, error) {
	args := []string{"check"}
	if readData {
		args = append(args, "--read-data")
	}
	res := CheckResult{ReadData: readData, Damaged: []string{}}
	_, err := r.run(ctx, args...)
	if err == nil {
		res.OK = true
		return res, nil
	}
	var re *ResticError
	if !errors.As(err, &re) || !strings.Contains(re.Stderr, "repository contains errors") {
		return res, err
	}
	seen := map[string]bool{}
	for _, m := range packRe.FindAllStringSubmatch(re.Stderr, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			res.Damaged = append(res.Damaged, m[1])
		}
	}
	res.Message = re.Message()
	packs := strings.Join(res.Damaged, ", ")
	if packs == "" {
		packs = "(restic named none; its words: " + strings.ReplaceAll(strings.TrimSpace(re.Stderr), "\n", "; ") + ")"
	}
	return res, errs.Failf("the repository %s is damaged: damaged pack(s) %s", r.Repo, packs).Advise(Damaged, "repo", r.Repo, "packs", packs)
}

// Device is the default device name: the host name, as restic records it
// (its first label when it is not a valid device name whole).
func Device() string {
	h, err := os.Hostname()
	if err == nil && CheckDevice(h) != nil {
		h, _, _ = strings.Cut(h, ".")
	}
	if err != nil || CheckDevice(h) != nil {
		return "unknown"
	}
	return h
}

// ageOf formats how long ago t was, in whole units.
func ageOf(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
