package backup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/tooltest"
	"github.com/hobbs-agent/hobbs/src/vault"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if os.Getenv("BACKUP_TEST_HELPER") != "" {
		os.Exit(helper())
	}
	os.Exit(tooltest.Main(m, "hobbs-backup-test-"))
}

// newInstance makes an initialised instance with a vault and n memories.
func newInstance(t testing.TB, dir string, n int) instance.Instance {
	t.Helper()
	in, err := instance.At(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates}); err != nil {
		t.Fatal(err)
	}
	v := vault.Open(in)
	if _, err := v.Init(vault.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Set("github-token", []byte("ghp_secret")); err != nil {
		t.Fatal(err)
	}
	ms := memory.Open(in, nil)
	for i := 0; i < n; i++ {
		if _, err := ms.Add(fmt.Sprintf("memory number %d about topic %d", i, i*7), memory.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// setUp makes an instance and a repository (at repo) joined with Init.
func setUp(t *testing.T, repo string) (instance.Instance, *Restic) {
	t.Helper()
	tooltest.Need(t, "restic")
	in := newInstance(t, filepath.Join(t.TempDir(), "hobbs"), 3)
	pw, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	r := &Restic{Repo: repo, Password: pw}
	res, err := Init(context.Background(), InitOptions{Instance: in, Restic: r, Vault: vault.Open(in), Device: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || !res.Stored {
		t.Fatalf("init: %+v", res)
	}
	return in, r
}

func opts(in instance.Instance, r *Restic) Options {
	return Options{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0"} // keeps every snapshot
}

// tree hashes every regular file beneath dir (relative path → sha256),
// skipping what a snapshot leaves out.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == filepath.Join("memory", ".index") || rel == ".locks") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || rel == "backup.json" || filepath.Base(rel) == ".lock" || rel == filepath.Join("logs", "audit.log") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	var diff []string
	for k, v := range a {
		if b[k] != v {
			diff = append(diff, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("%s: differs in %v", what, diff)
	}
}

func kindOf(err error) errs.Kind { return errs.AdviceOf(err).Kind }

// leftovers lists the staging directories beside the instance.
func leftovers(t *testing.T, in instance.Instance) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(in.Root), "."+filepath.Base(in.Root)+".restore-*"))
	return m
}

func TestBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	// A derived index exists and a stray temporary file: neither is saved.
	if _, err := memory.Open(in, nil).Stats(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in.Root, "data", ".tmp-123"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, in.Root)
	delete(before, filepath.Join("data", ".tmp-123"))
	res, err := Backup(ctx, opts(in, r))
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot == "" || res.FilesNew == 0 {
		t.Fatalf("backup: %+v", res)
	}
	snaps, err := List(ctx, r)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("list: %v %+v", err, snaps)
	}
	s := snaps[0]
	if s.Device != "laptop" || s.Version != "v1.2.0" || s.Format != Format || s.Host != "laptop" {
		t.Errorf("snapshot tags: %+v", s)
	}
	ls, err := r.run(ctx, "ls", s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/memory/.index", "/.locks", "/memory/.lock", "backup.json", ".tmp-123"} {
		if strings.Contains(string(ls), bad) {
			t.Errorf("snapshot holds %s", bad)
		}
	}
	if !strings.Contains(string(ls), "/vault/data/github-token.age") || !strings.Contains(string(ls), "/vault/keys/identity.txt") {
		t.Errorf("snapshot lacks the vault:\n%s", ls)
	}
	st, _, _ := LoadState(in)
	if st.LastOK == nil || st.LastOK.Snapshot != res.Snapshot || st.Repo != r.Repo {
		t.Errorf("state after backup: %+v", st)
	}

	// The instance changes; restore brings back the snapshot and keeps the
	// changed one beside it.
	if _, err := memory.Open(in, nil).Add("added after the backup", memory.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := tree(t, in.Root)
	rr, err := Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0",
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Swapped || rr.Memories != 3 || rr.Previous != in.Root+".before-restore-20260102-030405" {
		t.Errorf("restore: %+v", rr)
	}
	sameTree(t, "restored instance", before, tree(t, in.Root))
	sameTree(t, "previous instance", changed, tree(t, rr.Previous))
	if l := leftovers(t, in); len(l) > 0 {
		t.Errorf("staging left: %v", l)
	}
	if st2, _, _ := LoadState(in); st2.Repo != r.Repo || st2.LastOK == nil {
		t.Errorf("the machine's record did not follow the swap: %+v", st2)
	}
	if v, err := vault.Open(in).Get("github-token"); err != nil || string(v) != "ghp_secret" {
		t.Errorf("restored vault: %q %v", v, err)
	}

	// Declined: nothing changes.
	now := tree(t, in.Root)
	rr, err = Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0", Confirm: func(RestoreResult) bool { return false }})
	if err != nil || rr.Swapped {
		t.Fatalf("declined restore: %+v %v", rr, err)
	}
	sameTree(t, "after a declined restore", now, tree(t, in.Root))

	// A new machine: no instance at all, only the repository and password.
	fresh, _ := instance.At(filepath.Join(t.TempDir(), "newlaptop", "hobbs"))
	rr, err = Restore(ctx, RestoreOptions{Instance: fresh, Restic: &Restic{Repo: r.Repo, Password: r.Password}, Device: "newlaptop", Version: "v1.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Previous != "" || !rr.Swapped {
		t.Errorf("new machine restore: %+v", rr)
	}
	sameTree(t, "new machine", before, tree(t, fresh.Root))
	if st, _, _ := LoadState(fresh); st.Repo != r.Repo || st.Device != "newlaptop" {
		t.Errorf("new machine's record: %+v", st)
	}
}

func TestWrongPassword(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatal(err)
	}
	before := tree(t, in.Root)
	bad := &Restic{Repo: r.Repo, Password: []byte("not-the-password")}
	_, err := Backup(ctx, opts(in, bad))
	if kindOf(err) != WrongPassword || errs.Code(err) != errs.Usage {
		t.Fatalf("backup with a wrong password: %v (%s)", err, kindOf(err))
	}
	_, err = Restore(ctx, RestoreOptions{Instance: in, Restic: bad, Device: "laptop", Version: "v1.2.0"})
	if kindOf(err) != WrongPassword {
		t.Fatalf("restore with a wrong password: %v", err)
	}
	sameTree(t, "after wrong passwords", before, tree(t, in.Root))
	if l := leftovers(t, in); len(l) > 0 {
		t.Errorf("staging left: %v", l)
	}
	snaps, _ := List(ctx, r)
	if len(snaps) != 1 {
		t.Errorf("snapshots: %d", len(snaps))
	}
	st, _, _ := LoadState(in)
	if st.Last == nil || !strings.Contains(st.Last.Error, "password") {
		t.Errorf("the failure is not recorded: %+v", st.Last)
	}
}

// newestPack returns the newest data pack file of a local repository.
func newestPack(t *testing.T, repo string) string {
	t.Helper()
	var best string
	var bt time.Time
	filepath.WalkDir(filepath.Join(repo, "data"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, _ := d.Info(); fi.ModTime().After(bt) || best == "" {
				best, bt = p, fi.ModTime()
			}
		}
		return nil
	})
	return best
}

// randomFile writes n random bytes to p.
func randomFile(t *testing.T, p string, n int) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptedPack(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	in, r := setUp(t, repo)
	first, err := Backup(ctx, opts(in, r))
	if err != nil {
		t.Fatal(err)
	}
	// The second snapshot's new data is in a pack of its own.
	randomFile(t, filepath.Join(in.Root, "data", "report.bin"), 256<<10)
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatal(err)
	}
	pack := newestPack(t, repo)
	if err := os.Chmod(pack, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(pack, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("CORRUPTED-BYTES!"), 200)
	f.Close()

	res, err := Check(ctx, r, true)
	if kindOf(err) != Damaged || !strings.Contains(err.Error(), filepath.Base(pack)) {
		t.Fatalf("check --read-data: %v %+v", err, res)
	}
	if len(res.Damaged) != 1 || res.Damaged[0] != filepath.Base(pack) {
		t.Errorf("damaged packs: %v, want %s", res.Damaged, filepath.Base(pack))
	}

	before := tree(t, in.Root)
	_, err = Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0"})
	if kindOf(err) != DamagedSnapshot || errs.AdviceOf(err).Facts["good"] != first.Snapshot {
		t.Fatalf("restore of the damaged snapshot: %v (%+v), want the last good %s", err, errs.AdviceOf(err), first.Snapshot)
	}
	sameTree(t, "after a refused restore", before, tree(t, in.Root))
	if l := leftovers(t, in); len(l) > 0 {
		t.Errorf("staging left: %v", l)
	}
	// The last good one restores.
	if _, err := Restore(ctx, RestoreOptions{Instance: in, Restic: r, Snapshot: first.Snapshot, Device: "laptop", Version: "v1.2.0"}); err != nil {
		t.Fatalf("restore of the last good snapshot: %v", err)
	}
}

func TestNewerSnapshotRefused(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	o := opts(in, r)
	o.Version = "v2.0.0"
	if _, err := Backup(ctx, o); err != nil {
		t.Fatal(err)
	}
	before := tree(t, in.Root)
	_, err := Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0"})
	if kindOf(err) != NewerHobbs || !strings.Contains(err.Error(), "v2.0.0") || !strings.Contains(err.Error(), "v1.2.0") {
		t.Fatalf("restore of a newer snapshot: %v", err)
	}
	sameTree(t, "after a refused restore", before, tree(t, in.Root))

	// A development build reads the format: a newer format is refused.
	if _, err := r.run(ctx, "tag", "--remove", tagFormat+"1", "--add", tagFormat+"2", "latest"); err != nil {
		t.Fatal(err)
	}
	_, err = Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "dev"})
	if kindOf(err) != NewerHobbs || !strings.Contains(err.Error(), "format 2") {
		t.Fatalf("restore of a newer format: %v", err)
	}
}

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		snap, ours string
		format     int
		refused    bool
	}{
		{"v1.2.0", "v1.2.0", 1, false},
		{"v1.1.9", "v1.2.0", 1, false},
		{"v1.3.0", "v1.2.0", 1, true},
		{"1.10.0", "v1.9.0", 1, true},
		{"dev", "v1.2.0", 1, false},
		{"v9.0.0", "dev", 1, false},
		{"dev", "dev", 2, true},
	} {
		err := CheckVersion(Snapshot{ShortID: "abc", Version: c.snap, Format: c.format}, c.ours)
		if (err != nil) != c.refused {
			t.Errorf("snapshot %s format %d, ours %s: %v", c.snap, c.format, c.ours, err)
		}
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestUnreachableRepository(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatal(err)
	}
	if err := updateState(in, func(s *State) { s.Every = Duration(24 * time.Hour) }); err != nil {
		t.Fatal(err)
	}
	gone := &Restic{Repo: fmt.Sprintf("rest:http://127.0.0.1:%d/repo", freePort(t)), Password: r.Password}
	_, err := Backup(ctx, opts(in, gone))
	if kindOf(err) != Unreachable {
		t.Fatalf("backup to an unreachable repository: %v (%s)", err, kindOf(err))
	}
	// The owner is told once, by the next command.
	a, ok := Tell(in, time.Now(), "")
	if !ok || a.Advice.Kind != Failed || !strings.Contains(a.Line, "cannot reach") {
		t.Fatalf("tell: %+v %v", a, ok)
	}
	if _, ok := Tell(in, time.Now(), ""); ok {
		t.Error("told twice")
	}
	// serve keeps its own record of what it told.
	if _, ok := Tell(in, time.Now(), filepath.Join(t.TempDir(), "told.json")); !ok {
		t.Error("serve was not told")
	}
	// The next scheduled backup works again, and the alert is gone.
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatal(err)
	}
	st, _, _ := LoadState(in)
	if _, ok := Pending(st, time.Now()); ok {
		t.Errorf("alert after a good backup: %+v", st)
	}
}

func TestPendingAndDoctorAges(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	st := State{Repo: "/r", Every: Duration(24 * time.Hour), LastOK: &Run{Time: t0, Snapshot: "abc"}, Last: &Run{Time: t0, Snapshot: "abc"}}
	if _, ok := Pending(st, t0.Add(24*time.Hour+MissGrace-time.Second)); ok {
		t.Error("overdue before its grace")
	}
	a, ok := Pending(st, t0.Add(24*time.Hour+MissGrace+time.Second))
	if !ok || a.Advice.Kind != Overdue {
		t.Errorf("not overdue after interval and grace: %+v", a)
	}
	st.Last = &Run{Time: t0.Add(time.Hour), Error: "boom"}
	if a, ok := Pending(st, t0.Add(2*time.Hour)); !ok || a.Advice.Kind != Failed {
		t.Errorf("a failure: %+v", a)
	}
}

func TestBackupWaitsForALiveWriter(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	unlock, err := in.FS().Lock(in.Lock("memory"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	old := LockTimeout
	LockTimeout = 200 * time.Millisecond
	defer func() { LockTimeout = old }()
	_, err = Backup(ctx, opts(in, r))
	unlock()
	if kindOf(err) != Busy {
		t.Fatalf("backup while memory is being written: %v", err)
	}
	if snaps, _ := List(ctx, r); len(snaps) != 0 {
		t.Errorf("a snapshot was taken while a writer held memory: %d", len(snaps))
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	o := opts(in, r)
	o.Keep = config.BackupKeep{Daily: 1}
	if _, err := Backup(ctx, o); err != nil {
		t.Fatal(err)
	}
	res, err := Backup(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forgotten) != 1 || res.Pruned {
		t.Errorf("forgotten: %v, pruned %v (want no prune within a week of init)", res.Forgotten, res.Pruned)
	}
	snaps, _ := List(ctx, r)
	if len(snaps) != 1 || !strings.HasPrefix(snaps[0].ID, res.Snapshot) {
		t.Errorf("after retention: %+v", snaps)
	}
	// A week on, the forgotten data is pruned.
	if err := updateState(in, func(s *State) { s.Pruned = time.Now().Add(-PruneEvery - time.Minute) }); err != nil {
		t.Fatal(err)
	}
	if res, err = Backup(ctx, o); err != nil {
		t.Fatal(err)
	}
	if len(res.Forgotten) != 1 || !res.Pruned {
		t.Errorf("a week on: forgotten %v, pruned %v", res.Forgotten, res.Pruned)
	}
	if _, err := Check(ctx, r, true); err != nil {
		t.Errorf("check after prune: %v", err)
	}
}

func TestOverRcloneServe(t *testing.T) {
	tooltest.Need(t, "rclone")
	tooltest.Need(t, "restic")
	ctx := context.Background()
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := exec.Command("rclone", "serve", "restic", "--addr", addr, dir)
	srv.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(dir, "rclone.conf"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rclone serve restic did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond) // polling for the listener, not a wait for a result
	}
	in, r := setUp(t, "rest:http://"+addr+"/hobbs")
	before := tree(t, in.Root)
	res, err := Backup(ctx, opts(in, r))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(ctx, r, true); err != nil {
		t.Fatal(err)
	}
	randomFile(t, filepath.Join(in.Root, "data", "later.bin"), 1000)
	rr, err := Restore(ctx, RestoreOptions{Instance: in, Restic: r, Snapshot: res.Snapshot, Device: "laptop", Version: "v1.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored over rest:", before, tree(t, in.Root))
	if rr.Previous == "" {
		t.Error("no previous instance kept")
	}
}

// TestSIGKILLHalfway kills a backup (hobbs's process and restic's) while
// restic writes packs: the next backup and check succeed, nothing is lost.
func TestSIGKILLHalfway(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	in, r := setUp(t, repo)
	for i := 0; i < 12; i++ {
		randomFile(t, filepath.Join(in.Root, "data", fmt.Sprintf("blob%d.bin", i)), 4<<20)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, r.Password, 0o600)
	// The test reaps the killed restic itself (a child subreaper): restic
	// takes a lock of a process that still exists, a zombie included, as
	// live, as it should.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BACKUP_TEST_HELPER=backup", "HELPER_INSTANCE="+in.Root, "HELPER_REPO="+repo, "HELPER_PW="+pwFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until restic has written a data pack, then kill the group.
	deadline := time.Now().Add(60 * time.Second)
	for newestPack(t, repo) == "" {
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatal("no pack written")
		}
		time.Sleep(5 * time.Millisecond) // polling the repository for the first pack
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err := cmd.Wait()
	if err == nil {
		t.Skip("the backup ended before it was killed") // cannot happen with 48 MiB of random data; a pass would be dishonest
	}
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil {
			break // ECHILD: every orphan reaped
		}
	}
	if snaps, _ := List(ctx, r); len(snaps) != 0 {
		t.Fatalf("a snapshot from the killed backup: %+v", snaps)
	}
	before := tree(t, in.Root)
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatalf("backup after the kill: %v", err)
	}
	if _, err := Check(ctx, r, true); err != nil {
		t.Fatalf("check after the kill: %v", err)
	}
	fresh, _ := instance.At(filepath.Join(t.TempDir(), "hobbs"))
	if _, err := Restore(ctx, RestoreOptions{Instance: fresh, Restic: r, Device: "laptop", Version: "v1.2.0"}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored after the kill", before, tree(t, fresh.Root))
}

// TestRestoreOntoAFullDisk restores a snapshot larger than the file
// system the instance is on (a small tmpfs, mounted in a mount namespace
// of the test's own): the instance in place is untouched, the staging
// directory removed.
func TestRestoreOntoAFullDisk(t *testing.T) {
	ctx := context.Background()
	if _, err := exec.LookPath("unshare"); err != nil {
		tooltest.Skip(t, "unshare not installed", "sudo apt-get install util-linux")
	}
	in, r := setUp(t, filepath.Join(t.TempDir(), "repo"))
	randomFile(t, filepath.Join(in.Root, "data", "big.bin"), 6<<20)
	if _, err := Backup(ctx, opts(in, r)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(in.Root, "data", "big.bin"))
	mnt := t.TempDir()
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, r.Password, 0o600)
	probe := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs \"$1\"", "-", mnt)
	if out, err := probe.CombinedOutput(); err != nil {
		tooltest.Skip(t, fmt.Sprintf("cannot mount a tmpfs in a namespace of its own (%v: %s)", err, out), "run as root, or enable unprivileged user namespaces")
	}
	cmd := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4m tmpfs \"$1\" && cp -a \"$2\" \"$1/hobbs\" && exec \"$3\" -test.run=NONE",
		"-", mnt, in.Root, os.Args[0])
	cmd.Env = append(os.Environ(), "BACKUP_TEST_HELPER=restore-full", "HELPER_INSTANCE="+filepath.Join(mnt, "hobbs"), "HELPER_REPO="+r.Repo, "HELPER_PW="+pwFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "HELPER OK") {
		t.Fatalf("%s", out)
	}
}

// helper runs in a child process of the test (BACKUP_TEST_HELPER).
func helper() int {
	in, _ := instance.At(os.Getenv("HELPER_INSTANCE"))
	pw, _ := os.ReadFile(os.Getenv("HELPER_PW"))
	r := &Restic{Repo: os.Getenv("HELPER_REPO"), Password: pw}
	ctx := context.Background()
	switch os.Getenv("BACKUP_TEST_HELPER") {
	case "backup":
		_, err := Backup(ctx, Options{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0"})
		fmt.Println(err)
		return 0
	case "restore-full":
		before := hashes(in.Root)
		_, err := Restore(ctx, RestoreOptions{Instance: in, Restic: r, Device: "laptop", Version: "v1.2.0"})
		if kindOf(err) != NoSpace {
			fmt.Printf("restore onto a full disk: %v (%s), want %s\n", err, kindOf(err), NoSpace)
			return 1
		}
		if after := hashes(in.Root); after != before {
			fmt.Println("the instance in place changed")
			return 1
		}
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(in.Root), ".hobbs.restore-*")); len(m) > 0 {
			fmt.Printf("staging left: %v\n", m)
			return 1
		}
		fmt.Printf("HELPER OK: %v\n", err)
		return 0
	}
	return 2
}

// hashes is one hash of every file's path and content beneath dir.
func hashes(dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			fmt.Fprintf(h, "%s\x00%x\x00", p, sha256.Sum256(b))
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

var _ = errors.New

func TestExpired(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 3, d, h, 0, 0, 0, time.Local) }
	var kept []Kept
	for _, d := range []int{1, 2, 2, 3, 9, 10, 10} {
		kept = append(kept, Kept{ID: fmt.Sprintf("d%d-%d", d, len(kept)), Time: day(d, len(kept))})
	}
	ids := func(ks []Kept) string {
		var s []string
		for _, k := range ks {
			s = append(s, k.ID)
		}
		sort.Strings(s)
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		keep config.BackupKeep
		want string
	}{
		{config.BackupKeep{}, ""},
		{config.BackupKeep{Daily: 2}, "d1-0 d10-5 d2-1 d2-2 d3-3"},
		{config.BackupKeep{Daily: 1, Weekly: 2}, "d1-0 d10-5 d2-1 d2-2 d9-4"}, // weeks 11 (9th, 10th) and 10 (3rd)
		{config.BackupKeep{Monthly: 1}, "d1-0 d10-5 d2-1 d2-2 d3-3 d9-4"},
		{config.BackupKeep{Daily: 7, Weekly: 4, Monthly: 12}, "d10-5 d2-1"},
	} {
		if got := ids(expired(kept, c.keep)); got != c.want {
			t.Errorf("keep %+v: expired %q, want %q", c.keep, got, c.want)
		}
	}
}

// A snapshot's path is the repository's word: one whose restored
// components include a link, or that is not clean and absolute, does not
// name the directory to swap in.
func TestStagedPathRefusesLinksAndDots(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "hobbs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "home", "me", "hobbs"), 0o755)
	os.Symlink(outside, filepath.Join(dir, "link"))
	if p, err := stagedPath(dir, Snapshot{ShortID: "ok", Paths: []string{"/home/me/hobbs"}}); err != nil || p != filepath.Join(dir, "home", "me", "hobbs") {
		t.Errorf("a plain path: %q %v", p, err)
	}
	for _, bad := range []string{"/link/hobbs", "/home/me/../../link/hobbs", "home/me/hobbs", "/", "/home/me/nothing"} {
		if p, err := stagedPath(dir, Snapshot{ShortID: "bad", Paths: []string{bad}}); err == nil {
			t.Errorf("%s: staged %s", bad, p)
		}
	}
}
