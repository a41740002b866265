package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEngineUnreachable: with the real docker CLI pointed at a socket that
// does not exist, run, ps and stop fail within 2 s with exit 3 and the fix,
// and run says so once (no retries, no warnings about leftovers). hobbs runs
// as an unprivileged user here, which hobbs run needs (it refuses root).
func TestEngineUnreachable(t *testing.T) {
	e := newEnv(t)
	wrapper := filepath.Join(e.dir, "docker-unreachable")
	writeFile(t, wrapper, "#!/bin/sh\nDOCKER_HOST=unix://"+filepath.Join(e.dir, "no-such.sock")+" exec docker \"$@\"\n")
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOBBS_HOME=" + e.inst, "HOBBS_DOCKER=" + wrapper}
	for _, args := range [][]string{
		e.runArgs(sessionName(t, "unreachable"), "true"),
		{"ps"},
		{"stop", sessionName(t, "unreachable")},
		{"stop", "--all"},
	} {
		t0 := time.Now()
		r := hobbsAs(nil, e.home, env, args...)
		d := time.Since(t0)
		if r.code != 3 || !strings.Contains(r.stderr, "hobbs: container engine not reachable") ||
			!strings.Contains(r.stderr, "hobbs: hint: start the engine") {
			t.Errorf("hobbs %s: exit %d, want 3 with the hint:\n%s", args[0], r.code, r.stderr)
		}
		if d > 2*time.Second {
			t.Errorf("hobbs %s took %v to fail, want at most 2s", args[0], d.Round(time.Millisecond))
		}
		if n := strings.Count(r.stderr, "not reachable"); n != 1 || strings.Contains(r.stderr, "warning") {
			t.Errorf("hobbs %s: want the one error, got:\n%s", args[0], r.stderr)
		}
	}
}
