package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStopAttached: `hobbs stop NAME` ends the session an attached `hobbs
// run` is running. The run reports that the session was stopped (not that
// its proxy failed), exits 143 (docs/cli.md), and nothing of the session is
// left. Which container the engine reports dead first varies: the stop is
// repeated with a command that ends at once on SIGTERM, and made with one
// that takes seconds to end, so that the proxy dies first.
func TestStopAttached(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	const quick = "touch /home/dev/hobbs/workspace/.started; sleep 120"
	const slow = `trap "sleep 2; exit 0" TERM; touch /home/dev/hobbs/workspace/.started; while :; do sleep 1; done`
	for i, script := range []string{quick, quick, quick, slow} {
		name := sessionName(t, "stop"+strconv.Itoa(i))
		started := filepath.Join(e.ws, ".started")
		_ = os.Remove(started)
		c := e.command(nil, e.runArgs(name, "sh", "-c", script)...)
		var errb strings.Builder
		c.Stderr = &errb
		e.start(t, c)
		waitFor(t, 60*time.Second, "the session to start", func() bool { return exists(started) })
		r := e.hobbs(nil, "stop", name)
		if r.code != 0 || strings.TrimSpace(r.stdout) != name {
			t.Errorf("stop %d: exit %d stdout %q stderr %q", i, r.code, r.stdout, r.stderr)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = c.Process.Kill()
			<-done
			t.Fatalf("stop %d: hobbs run did not exit within 30s of hobbs stop\n%s", i, errb.String())
		}
		code := c.ProcessState.ExitCode()
		out := errb.String()
		if code != 143 || !strings.Contains(out, "hobbs: session "+name+" stopped") || strings.Contains(out, "egress proxy failed") {
			t.Errorf("stop %d: the attached run exited %d, want 143 saying the session was stopped:\n%s", i, code, out)
		}
		if left := e.leftovers(t); len(left) > 0 {
			t.Errorf("stop %d: left after the stop: %v", i, left)
		}
	}
	// The host's audit log records each end as a stop.
	b, err := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"outcome":"stopped"`); n != 4 {
		t.Errorf("%d session ends recorded as stopped, want 4:\n%s", n, b)
	}
	_ = os.Remove(filepath.Join(e.ws, ".started"))
}
