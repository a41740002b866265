package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// A second device. Devices share one repository and each backs up its own
// snapshots (tagged with the device). Sync takes another device's newest
// snapshot, stages what changed of it since the base into a directory
// beside the instance (stage.go; host-only: nothing mounts it), checks
// what came in (the first sync from a device: all of it, as Restore does),
// and merges it into the instance three-way (src/layer):
//
//   - base: the snapshot of that device this device merged last, kept
//     beside the instance (SyncBase) or staged again from the
//     repository by its ID; none at the first sync (a union: a path both
//     hold with different contents is a conflict);
//   - ours: the instance; theirs: the staged snapshot.
//
// Memories merge by meaning (memory.MergeLayer); playbooks, skills and
// agents line-wise (layer.Text). What does not merge stays as it is here
// and the other device's version is held for review (provenance.HoldSet),
// as are the changes the other device itself holds for review; each item
// names the device. Policy and grants merge only WithPolicy. Vault
// entries merge by name: an entry only the other device has is added; a
// name with different values is a conflict, reported and never
// overwritten.

// syncFault, when set (tests), is called at the named points of a sync;
// an error it returns fails the sync there.
var syncFault func(point string) error

func fault(point string) error {
	if syncFault == nil {
		return nil
	}
	return syncFault(point)
}

// SyncOptions are what Sync needs.
type SyncOptions struct {
	Instance instance.Instance
	Restic   *Restic // Repo and Password set
	// Device is this device; From the device to take from ("": the one
	// other device in the repository).
	Device, From string
	Version      string // this hobbs's version
	// WithPolicy merges policy.yaml and the grants too.
	WithPolicy bool
	// Passphrase opens passphrase-protected vault identities (the staged
	// snapshot's and this instance's).
	Passphrase vault.PassphraseFunc
	Audit      *audit.Logger
	Now        func() time.Time
	// Progress is told each step ("restore", "verify", "merge").
	Progress func(step string)
}

// SyncResult says what Sync did.
type SyncResult struct {
	From     string   `json:"from"`
	Snapshot Snapshot `json:"snapshot"`
	// Base is the snapshot merged from last ("": none, a first sync).
	Base string `json:"base,omitempty"`
	// UpToDate: the snapshot is the one merged last; nothing was done.
	UpToDate bool `json:"up_to_date"`
	// Changed are the paths (relative to the instance) the merge changed.
	Changed []string `json:"changed"`
	// Held are the review items made: conflicts and the other device's
	// own held changes.
	Held []provenance.Item `json:"held"`
	// Conflicts are the paths that did not merge and that review does not
	// hold (policy, grants, a file of a share review does not watch): they
	// stay as they are here.
	Conflicts []string `json:"conflicts"`
	// VaultAdded are the entries taken from the other device;
	// VaultConflicts the names with different values on the two.
	VaultAdded     []string `json:"vault_added"`
	VaultConflicts []string `json:"vault_conflicts"`
	WithPolicy     bool     `json:"with_policy"`
	Problems       []string `json:"problems"`
	// Advice, when the sync left something to decide (SyncConflicts).
	Advice errs.Advice `json:"-"`
}

// syncShares are the parts of the instance merged line-wise, each under
// its lock (lockRes).
var syncShares = []string{"playbooks", "skills", "agents"}

// SyncBase is where the base of syncs from device is kept: beside the
// instance, outside it (no session mounts it, no snapshot holds it).
func SyncBase(in instance.Instance, device string) string {
	return filepath.Join(filepath.Dir(in.Root), "."+filepath.Base(in.Root)+".sync", device)
}

// Sync merges the newest snapshot of another device into o.Instance.
func Sync(ctx context.Context, o SyncOptions) (res SyncResult, err error) {
	in := o.Instance
	now, step := clock(o.Now), progress(o.Progress)
	res.WithPolicy = o.WithPolicy
	snaps, snap, err := begin(ctx, o.Restic, "syncs", o.Version, func(snaps []Snapshot) (Snapshot, error) {
		return pickOther(snaps, o.Device, o.From)
	})
	res.From, res.Snapshot = snap.Device, snap
	if err != nil {
		return res, err
	}
	// One sync of the instance at a time: a second would merge the same
	// snapshot against the same base again.
	unlock, err := lockRes(in, "sync")
	if err != nil {
		return res, err
	}
	defer unlock()
	st, _, err := LoadState(in)
	if err != nil {
		return res, err
	}
	last := st.Synced[snap.Device]
	res.Base = last.Snapshot
	if last.Memory != nil {
		done := Snapshot{ID: last.Snapshot, ShortID: last.Snapshot[:min(8, len(last.Snapshot))], Device: snap.Device}
		for _, s := range snaps {
			if s.ID == last.Snapshot {
				done = s
			}
		}
		m := merger{o: o, res: &res, snap: done, ours: in, now: now()}
		if err := m.finishMemory(last.Memory); err != nil {
			return res, err
		}
	}
	if last.Snapshot == snap.ID {
		res.UpToDate = true
		return res, nil
	}
	staging, err := stagingDir(in, "sync")
	if err != nil {
		return res, err
	}
	defer removeStaging(staging, &err)
	base, problem := syncBase(ctx, o.Restic, in, snaps, last.Snapshot, snap.Device, filepath.Join(staging, "base"))
	if problem != "" {
		res.Problems = append(res.Problems, problem)
		res.Base = ""
	}
	step("restore")
	baseDir := ""
	if base != nil {
		baseDir = base.Root
	}
	sg, err := stageSnapshot(ctx, o.Restic, snap, baseDir, filepath.Join(staging, "theirs"))
	if err != nil {
		return res, err
	}
	res.Problems = append(res.Problems, sg.Problems...)
	step("verify")
	theirs, _ := instance.At(sg.Dir)
	var bad map[string]string
	if base == nil {
		if _, err := Verify(theirs, o.Restic.Password, o.Passphrase); err != nil {
			return res, errs.Wrap(errs.Failure, err, "snapshot %s of %s restored but does not check out; nothing was merged", snap.ShortID, snap.Device).(*errs.Error).
				Advise(NotVerified, "snapshot", snap.ShortID)
		}
		// The index Verify built is this machine's, not the base's.
		if err := os.RemoveAll(theirs.MemoryIndex()); err != nil {
			return res, errs.Wrap(errs.Failure, err, "remove %s", theirs.MemoryIndex())
		}
	} else {
		bad = verifyParts(theirs, sg.Changed)
		for _, p := range slices.Sorted(maps.Keys(bad)) {
			res.Problems = append(res.Problems, fmt.Sprintf("%s in the snapshot of %s does not read (%s): not merged", p, snap.Device, bad[p]))
		}
	}
	step("merge")
	m := merger{o: o, res: &res, snap: snap, ours: in, theirs: theirs, base: base, now: now(), listed: true, bad: bad}
	for _, p := range sg.Changed {
		if bad[p] == "" {
			m.known = append(m.known, p)
		}
	}
	if base != nil {
		m.staged = map[string]bool{}
		for _, p := range sg.Changed {
			m.staged[p] = true
		}
	}
	if err := m.run(); err != nil {
		return res, err
	}
	memPaths, err := m.changed("memory", derived)
	if err != nil {
		return res, err
	}
	// The merged snapshot is the base of the next sync from its device;
	// without WithPolicy its policy and grants are not merged, so the base
	// keeps those the last base had.
	keepOwn := func(p string) bool { return !o.WithPolicy && (p == "policy.yaml" || strings.HasPrefix(p, "grants/")) }
	if base == nil && !o.WithPolicy {
		if err := dropPolicy(theirs); err != nil {
			return res, err
		}
	}
	// The new base is kept and recorded before a memory is written, with
	// the memory merge as pending: a sync that fails after it finishes
	// that merge (finishMemory) rather than merging the same snapshot
	// again, which would count a memory's reinforcements twice.
	keep := SyncBase(in, snap.Device)
	prev, kept, err := keepBase(keep, base, theirs, sg.Changed, keepOwn, snap.ID, staging)
	if err != nil {
		return res, err
	}
	var pending *PendingMemory
	if len(memPaths) > 0 {
		since, err := mark(keep)
		if err != nil {
			return res, err
		}
		pending = &PendingMemory{Base: res.Base, Since: since, Paths: memPaths}
	}
	if err := updateState(in, func(s *State) {
		if s.Synced == nil {
			s.Synced = map[string]Synced{}
		}
		s.Synced[snap.Device] = Synced{Snapshot: snap.ID, Time: now().UTC(), Memory: pending}
	}); err != nil {
		return res, err
	}
	if pending != nil {
		if err := fault("memory"); err != nil {
			return res, err
		}
		m.base, m.theirs, m.staged = prev, kept, nil
		if err := m.memory(memPaths); err != nil {
			return res, err
		}
		if err := fault("merged"); err != nil {
			return res, err
		}
		if err := memoryDone(in, keep, snap.Device); err != nil {
			return res, err
		}
	}
	if n := len(res.Held) + len(res.Conflicts) + len(res.VaultConflicts); n > 0 {
		res.Advice = errs.NewAdvice(SyncConflicts, "device", snap.Device, "held", fmt.Sprint(len(res.Held)))
	}
	if o.Audit != nil {
		o.Audit.Record(audit.Entry{Event: "backup.sync", Subject: snap.ShortID,
			Detail: map[string]any{"repo": o.Restic.Repo, "device": snap.Device, "base": res.Base, "changed": len(res.Changed),
				"held": len(res.Held), "conflicts": res.Conflicts, "vault_added": res.VaultAdded,
				"vault_conflicts": res.VaultConflicts, "with_policy": o.WithPolicy}}, nil)
	}
	return res, nil
}

// pickOther is the newest snapshot of from, or of the one device other
// than device.
func pickOther(snaps []Snapshot, device, from string) (Snapshot, error) {
	devices := map[string]bool{}
	var out Snapshot
	for _, s := range snaps {
		if s.Device == device || (from != "" && s.Device != from) {
			continue
		}
		devices[s.Device] = true
		out = s // oldest first: the last one is the newest
	}
	switch {
	case len(devices) == 0 && from != "":
		return out, errs.Missingf("the repository holds no snapshot of device %s", from).Advise(SyncNoOther, "device", device)
	case len(devices) == 0:
		return out, errs.Missingf("the repository holds no snapshot of another device than %s", device).Advise(SyncNoOther, "device", device)
	case len(devices) > 1:
		names := make([]string, 0, len(devices))
		for d := range devices {
			names = append(names, d)
		}
		sort.Strings(names)
		return out, errs.Usagef("the repository holds snapshots of %d other devices: %s", len(names), strings.Join(names, ", ")).
			Advise(SyncWhich, "devices", strings.Join(names, ", "))
	}
	return out, nil
}

// syncBase is the instance of the snapshot id of device merged last: the
// copy kept beside the instance, else staged again from the repository
// into dir. Without one (a first sync, or the base is gone) it is nil,
// with a problem saying why when there should have been one.
func syncBase(ctx context.Context, r *Restic, in instance.Instance, snaps []Snapshot, id, device, dir string) (*instance.Instance, string) {
	if id == "" {
		return nil, ""
	}
	keep := SyncBase(in, device)
	if b, err := safefile.Beneath(keep).ReadFile("snapshot", 128); err == nil && strings.TrimSpace(string(b)) == id {
		if fi, err := os.Lstat(filepath.Join(keep, "instance")); err == nil && fi.IsDir() {
			bin, _ := instance.At(filepath.Join(keep, "instance"))
			return &bin, ""
		}
	}
	for _, s := range snaps {
		if s.ID != id {
			continue
		}
		sg, err := stageSnapshot(ctx, r, s, "", dir)
		if err != nil {
			return nil, fmt.Sprintf("the base (snapshot %s of %s) did not restore (%v): merged as a first sync", s.ShortID, device, err)
		}
		bin, _ := instance.At(sg.Dir)
		return &bin, ""
	}
	return nil, fmt.Sprintf("the base (snapshot %.8s of %s) is no longer in the repository: merged as a first sync", id, device)
}

// verifyParts checks the staged files of changed that a merge reads by
// their format: memories, config.yaml and policy.yaml parse. It returns
// the paths that do not, with why.
func verifyParts(theirs instance.Instance, changed []string) map[string]string {
	bad := map[string]string{}
	for _, p := range changed {
		tier := memory.Tier("")
		switch {
		case strings.HasPrefix(p, "memory/active/"):
			tier = memory.Active
		case strings.HasPrefix(p, "memory/archive/"):
			tier = memory.Archive
		case p != "config.yaml" && p != "policy.yaml":
			continue
		}
		data, err := theirs.FS().ReadFile(filepath.FromSlash(p), layer.MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed there
		}
		if err == nil {
			switch {
			case p == "config.yaml":
				_, err = config.Load(theirs.FS(), theirs.Config())
			case p == "policy.yaml":
				_, err = policy.Parse(theirs.Policy(), data)
			case strings.HasSuffix(p, ".md") && !strings.HasPrefix(path.Base(p), "."):
				_, err = memory.Parse(data, tier)
			}
		}
		if err != nil {
			bad[p] = err.Error()
		}
	}
	return bad
}

// merger is one sync's merge.
type merger struct {
	o            SyncOptions
	res          *SyncResult
	snap         Snapshot
	ours, theirs instance.Instance
	base         *instance.Instance // nil: none
	now          time.Time
	conflicts    []provenance.Pending
	// listed: known are the paths (relative to the instance) whose file
	// differs between base and theirs, as staging found them; else the
	// trees are compared. bad are the paths of theirs that do not read,
	// never merged.
	listed bool
	known  []string
	bad    map[string]string
	// staged, when set, are the paths staged of a sparse staging (the
	// files of theirs that differ from base): theirs of a sparse part is
	// read through overlay.
	staged map[string]bool
}

// theirsTree is dir (relative to the instance) of theirs.
func (m *merger) theirsTree(dir string) layer.Tree {
	t := treeOf(&m.theirs, dir)
	if m.staged == nil || !sparse(dir) {
		return t
	}
	return overlay{staged: t, base: treeOf(m.base, dir), changed: m.staged, dir: dir}
}

// overlay is a share of a sparse staging: a path that changed is the
// staged file (or none: removed), any other the base's.
type overlay struct {
	staged, base layer.Tree
	changed      map[string]bool
	dir          string
}

func (t overlay) Get(p string) (layer.Version, error) {
	if t.changed[path.Join(t.dir, p)] {
		return t.staged.Get(p)
	}
	return t.base.Get(p)
}

// treeOf is dir (relative to the instance) of in; of no instance, no file.
func treeOf(in *instance.Instance, dir string) layer.Tree {
	if in == nil {
		return noTree{}
	}
	return layer.DirTree{Root: in.FS(), Dir: dir}
}

type noTree struct{}

func (noTree) Get(string) (layer.Version, error) { return layer.Absent, nil }

// run merges all but the memories (Sync merges those once the new base
// is recorded). Each part merges the same way again after a failure: a
// line-wise change taken is the same change on both sides, a vault entry
// taken is the same value, a held or forwarded change already waiting is
// not held again.
func (m *merger) run() error {
	for _, share := range syncShares {
		if err := m.share(share, share); err != nil {
			return err
		}
	}
	if m.o.WithPolicy {
		if err := m.policy(); err != nil {
			return err
		}
	}
	m.vault()
	held, err := m.hold()
	if err != nil {
		return err
	}
	m.res.Held = append(m.res.Held, held...)
	forwarded, err := m.forward()
	if err != nil {
		return err
	}
	m.res.Held = append(m.res.Held, forwarded...)
	sort.Strings(m.res.Changed)
	return nil
}

// changed lists the files below dir (relative to the instance) whose
// content differs between base and theirs, slash paths relative to dir;
// skip leaves a path (relative to dir) out. What is neither a directory
// nor a regular file in theirs is a problem, not merged.
func (m *merger) changed(dir string, skip func(p string) bool) ([]string, error) {
	if m.listed {
		var out []string
		for _, p := range m.known {
			if rel, ok := strings.CutPrefix(p, dir+"/"); ok && (skip == nil || !skip(rel)) {
				out = append(out, rel)
			}
		}
		return out, nil
	}
	files := map[string]bool{}
	list := func(in *instance.Instance, note bool) error {
		if in == nil {
			return nil
		}
		top := filepath.Join(in.Root, filepath.FromSlash(dir))
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == top {
					return filepath.SkipDir
				}
				return err
			}
			rel, _ := filepath.Rel(top, p)
			rel = filepath.ToSlash(rel)
			if rel != "." && skip != nil && skip(rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.IsDir():
			case d.Type().IsRegular():
				files[rel] = true
			case note:
				m.res.Problems = append(m.res.Problems, fmt.Sprintf("%s/%s in the snapshot of %s is not a regular file: not taken", dir, rel, m.snap.Device))
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := list(&m.theirs, true); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "list %s of the snapshot", dir)
	}
	if err := list(m.base, false); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "list %s of the base", dir)
	}
	bt, tt := treeOf(m.base, dir), treeOf(&m.theirs, dir)
	var out []string
	for p := range files {
		b, err1 := bt.Get(p)
		t, err2 := tt.Get(p)
		if err1 != nil || err2 != nil || !b.Equal(t) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// derived leaves out what a share's merge never takes: locks, the memory
// index, temporary files.
func derived(p string) bool {
	b := path.Base(p)
	return b == ".lock" || strings.HasSuffix(b, ".lock") || p == ".index" || strings.HasPrefix(p, ".index/") || strings.HasPrefix(b, ".tmp-")
}

// memory merges paths (relative to the memory directory) by meaning.
func (m *merger) memory(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	base := treeOf(m.base, "memory")
	if m.base == nil {
		// With no base the memory log's base is what both logs begin
		// with: MergeLayer appends what theirs adds to it.
		o, err1 := treeOf(&m.ours, "memory").Get("history.jsonl")
		t, err2 := m.theirsTree("memory").Get("history.jsonl")
		if err1 == nil && err2 == nil {
			base = logBase{base, layer.Of(commonLines(o.Data, t.Data))}
		}
	}
	// No stamp: a memory taken stays byte for byte what the other device
	// holds, so that when it comes back from there it is the same file,
	// not a second add of it (the audit log records the sync).
	outs, err := memory.MergeLayer(m.ours.FS(), "memory", base, m.theirsTree("memory"), paths, "")
	if err != nil {
		return errs.Wrap(errs.Failure, err, "merge the memories of %s", m.snap.Device)
	}
	m.outcomes("memory", outs)
	held, err := m.hold()
	if err != nil {
		return err
	}
	m.res.Held = append(m.res.Held, held...)
	sort.Strings(m.res.Changed)
	return nil
}

// share merges dir (relative to the instance) line-wise under lock.
func (m *merger) share(dir, lock string) error {
	paths, err := m.changed(dir, derived)
	if err != nil || len(paths) == 0 {
		return err
	}
	unlock, err := lockRes(m.ours, lock)
	if err != nil {
		return err
	}
	defer unlock()
	outs := layer.Trees(paths, treeOf(m.base, dir), treeOf(&m.ours, dir), m.theirsTree(dir), nil)
	if err := layer.Apply(m.ours.FS(), dir, outs); err != nil {
		return errs.Wrap(errs.Failure, err, "merge %s of %s", dir, m.snap.Device)
	}
	m.outcomes(dir, outs)
	return nil
}

// outcomes records what a merge of dir did: changed paths, and conflicts
// to hold (a path review watches) or to report.
func (m *merger) outcomes(dir string, outs []layer.Outcome) {
	for _, o := range outs {
		p := path.Join(dir, o.Path)
		switch {
		case o.Conflict && o.Err != nil:
			m.res.Problems = append(m.res.Problems, fmt.Sprintf("%s: %v: not merged", p, o.Err))
		case o.Conflict:
			if _, ok := provenance.Watched(p); ok && (o.Theirs.Exists || o.Base.Exists) {
				m.conflicts = append(m.conflicts, provenance.Pending{Path: p, Base: o.Base.Data, HadBase: o.Base.Exists,
					Text: o.Theirs.Data, Removed: !o.Theirs.Exists})
			} else {
				m.res.Conflicts = append(m.res.Conflicts, p)
			}
		case o.Changed:
			m.res.Changed = append(m.res.Changed, p)
		}
	}
}

// policy merges policy.yaml (kept only when it still parses) and the
// grants.
func (m *merger) policy() error {
	if err := m.share("grants", "grants"); err != nil {
		return err
	}
	unlock, err := lockRes(m.ours, "policy")
	if err != nil {
		return err
	}
	defer unlock()
	const p = "policy.yaml"
	if m.bad[p] != "" {
		return nil
	}
	outs := layer.Trees([]string{p}, treeOf(m.base, "."), treeOf(&m.ours, "."), m.theirsTree("."), nil)
	o := &outs[0]
	if o.Changed && !o.Conflict && o.Result.Exists {
		if _, err := policy.Parse(m.ours.Policy(), o.Result.Data); err != nil {
			o.Conflict, o.Changed = true, false
		}
	}
	if err := layer.Apply(m.ours.FS(), ".", outs); err != nil {
		return errs.Wrap(errs.Failure, err, "merge %s of %s", p, m.snap.Device)
	}
	m.outcomes(".", outs)
	return nil
}

// vault merges the vault entries by name: one only the other device has
// is added here (unless the base had it: removed here since); a name with
// different values on the two is a conflict, left as it is here.
func (m *merger) vault() {
	if _, err := m.theirs.FS().Lstat(m.theirs.VaultIdentity()); err != nil {
		return
	}
	tv := vault.Open(m.theirs)
	tv.Audit, tv.Passphrase = nil, m.o.Passphrase
	entries, _, err := tv.List()
	if err != nil {
		m.res.Problems = append(m.res.Problems, fmt.Sprintf("the vault of %s does not list: %v", m.snap.Device, err))
		return
	}
	ov := vault.Open(m.ours)
	ov.Passphrase = m.o.Passphrase
	ov.Audit = m.o.Audit
	for _, e := range entries {
		if _, err := m.ours.FS().Lstat(m.ours.VaultEntry(e.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.res.Problems = append(m.res.Problems, fmt.Sprintf("vault entry %s: %v", e.Name, err))
			continue
		} else if err != nil {
			if m.base != nil {
				if _, err := m.base.FS().Lstat(m.base.VaultEntry(e.Name)); err == nil {
					continue // removed here since the last sync
				}
			}
			val, err := tv.Get(e.Name)
			if err == nil {
				_, err = ov.Set(e.Name, val)
			}
			if err != nil {
				m.res.Problems = append(m.res.Problems, fmt.Sprintf("vault entry %s of %s not taken: %v", e.Name, m.snap.Device, err))
				continue
			}
			m.res.VaultAdded = append(m.res.VaultAdded, e.Name)
			continue
		}
		theirs, err1 := tv.Get(e.Name)
		ours, err2 := ov.Get(e.Name)
		if err := errors.Join(err1, err2); err != nil {
			m.res.Problems = append(m.res.Problems, fmt.Sprintf("vault entry %s not compared: %v", e.Name, err))
			continue
		}
		if !bytes.Equal(theirs, ours) {
			m.res.VaultConflicts = append(m.res.VaultConflicts, e.Name)
		}
	}
}

// session is the review record of this sync, with why.
func (m *merger) session(why string) []provenance.Session {
	return []provenance.Session{{Name: "sync-" + m.snap.Device + "-" + m.snap.ShortID,
		Origin:  provenance.Origin{Kind: "sync", Name: m.snap.Device},
		Started: m.now, Ended: m.now, Why: []string{why}}}
}

// hold holds the conflicts for review, the other device's version of
// each, but one already waiting (the same path and text: a sync again from
// the same device before the owner decided).
func (m *merger) hold() ([]provenance.Item, error) {
	if len(m.conflicts) == 0 {
		return nil, nil
	}
	store := provenance.ForReview(m.ours.FS(), m.o.Audit)
	have, err := waiting(store)
	if err != nil {
		return nil, err
	}
	var todo []provenance.Pending
	for _, c := range m.conflicts {
		after := ""
		if !c.Removed {
			after = hashOf(c.Text)
		}
		if !have[c.Path+" "+after] {
			todo = append(todo, c)
		}
	}
	m.conflicts = nil
	if len(todo) == 0 {
		return nil, nil
	}
	return store.HoldSet(m.session("changed on both devices: this one and "+m.snap.Device), todo)
}

// waiting is the changes waiting in the review store, each as its path
// and the hash of its text ("" a removal).
func waiting(store *provenance.Store) (map[string]bool, error) {
	items, err := store.List(false)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, it := range items {
		have[it.Path+" "+it.After] = true
	}
	return have, nil
}

// forward holds here what the other device holds for review (waiting
// there and not already waiting there at the base, which the last sync
// forwarded).
func (m *merger) forward() ([]provenance.Item, error) {
	theirs := provenance.ForReview(m.theirs.FS(), nil)
	items, err := theirs.List(false)
	if err != nil {
		m.res.Problems = append(m.res.Problems, fmt.Sprintf("the review list of %s does not read: %v", m.snap.Device, err))
		return nil, nil
	}
	old := map[string]bool{}
	if m.base != nil {
		if before, err := provenance.ForReview(m.base.FS(), nil).List(false); err == nil {
			for _, it := range before {
				old[it.ID+" "+it.After] = true
			}
		}
	}
	var out []provenance.Item
	store := provenance.ForReview(m.ours.FS(), m.o.Audit)
	have, err := waiting(store)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if old[it.ID+" "+it.After] || len(it.Sessions) == 0 || have[it.Path+" "+it.After] {
			continue
		}
		before, after, err := theirs.Content(it.ID)
		if err != nil {
			m.res.Problems = append(m.res.Problems, fmt.Sprintf("held change %s of %s does not read: %v", it.ID, m.snap.Device, err))
			continue
		}
		why := strings.Join(it.Sessions[0].Why, "; ")
		if why == "" {
			why = "waiting for review there"
		}
		held, err := store.HoldSet(m.session(fmt.Sprintf("held for review on device %s (%s, session %s): %s", m.snap.Device, it.ID, it.Sessions[0].Name, why)),
			[]provenance.Pending{{Path: it.Path, Base: before, HadBase: it.Before != "", Text: after, Removed: it.After == ""}})
		if err != nil {
			m.res.Problems = append(m.res.Problems, fmt.Sprintf("held change %s of %s not held here: %v", it.ID, m.snap.Device, err))
			continue
		}
		out = append(out, held...)
	}
	return out, nil
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// logBase is a tree with history.jsonl given.
type logBase struct {
	layer.Tree
	log layer.Version
}

func (t logBase) Get(p string) (layer.Version, error) {
	if p == "history.jsonl" {
		return t.log, nil
	}
	return t.Tree.Get(p)
}

// commonLines is the longest run of whole lines both a and b begin with
// (a whole when the two are the same).
func commonLines(a, b []byte) []byte {
	if bytes.Equal(a, b) {
		return a
	}
	n := 0
	for i := 0; i < len(a) && i < len(b) && a[i] == b[i]; i++ {
		if a[i] == '\n' {
			n = i + 1
		}
	}
	return a[:n]
}

// dropPolicy removes the policy and grants of the staged to: a base
// without them (a first sync not WithPolicy merged none).
func dropPolicy(to instance.Instance) error {
	for _, p := range []string{to.Policy(), to.Grants()} {
		if err := os.RemoveAll(p); err != nil {
			return errs.Wrap(errs.Failure, err, "keep the base: %s", p)
		}
	}
	return nil
}

// syncParts are the parts of an instance a sync reads of its base.
var syncParts = []string{"config.yaml", "foundation.md", "policy.yaml", "grants", "memory", "playbooks", "skills", "agents", "vault", "provenance"}

// KeepBase keeps the parts of the instance at dir that a sync reads as
// the base of the next sync from device: a copy (the instance's own files
// change in place, its memory log by appends), beside in.
func KeepBase(in instance.Instance, dir, device, snapshot string) error {
	keep := SyncBase(in, device)
	if err := os.RemoveAll(keep); err != nil {
		return errs.Wrap(errs.Failure, err, "replace %s", keep)
	}
	to := filepath.Join(keep, "instance")
	if err := os.MkdirAll(to, 0o700); err != nil {
		return errs.Wrap(errs.Failure, err, "create %s", keep)
	}
	for _, p := range syncParts {
		if err := copyTree(filepath.Join(dir, p), filepath.Join(to, p)); err != nil {
			_ = os.RemoveAll(keep)
			return errs.Wrap(errs.Failure, err, "keep the base %s", keep)
		}
	}
	if err := safefile.Beneath(keep).Write("snapshot", []byte(snapshot+"\n"), 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "keep the base %s", keep)
	}
	return nil
}

// copyTree copies the directories and regular files of from (none: no
// copy) to to; anything else, and the memory index, is left out.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == from {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir() && d.Name() == ".index":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}
