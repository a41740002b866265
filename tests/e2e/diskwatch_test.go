package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fillDisk writes 4 MiB to the workspace every half second until a write
// fails (the disk is full) or it is stopped.
const fillDisk = `i=0
while dd if=/dev/zero of=$HOME/hobbs/workspace/fill$i bs=1M count=4 2>/dev/null; do
	i=$((i+1))
	sleep 0.5
done
echo "disk full after $i files"
`

// TestDiskWatch: attack. The workspace is a 128 MiB tmpfs (a disk the
// agent can fill); a session writes to it without end. With
// resources.min_free_disk: 64m the launcher stops the session before the
// disk is full, says why, and keeps what was written.
func TestDiskWatch(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test mounts a tmpfs: run the e2e suite as root (CI does)")
	}
	t.Parallel()
	e := newEnv(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=128m,uid=%d,gid=%d,mode=0755", testUID, testGID), "tmpfs", e.ws).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", e.ws).Run() })
	cfg := filepath.Join(e.inst, "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, strings.Replace(string(b), `min_free_disk: "1g"`, `min_free_disk: "64m"`, 1))
	r := e.hobbs(nil, e.runArgs(sessionName(t, "fill"), "sh", "-c", fillDisk)...)
	t.Logf("session: exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
	if strings.Contains(r.stdout, "disk full after") {
		t.Fatal("the agent filled the disk: the session was not stopped")
	}
	if r.code != 1 || !strings.Contains(r.stderr, "stopped, what it wrote kept: the filesystem holding "+e.ws+" has ") ||
		!strings.Contains(r.stderr, "free, below resources.min_free_disk (64 MiB)") ||
		!strings.Contains(r.stderr, "hint: free space on that disk") {
		t.Fatalf("exit %d: the stop is not explained", r.code)
	}
	files, _ := filepath.Glob(filepath.Join(e.ws, "fill*"))
	if len(files) < 8 {
		t.Errorf("%d files kept, want the 64 MiB written before the stop", len(files))
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
