package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestDetach: hobbs run --detach returns once the agent runs and prints the
// session's name; the session goes on without the terminal; hobbs exec runs
// a command in it with the session's variables and passes its exit code
// on; hobbs logs shows its output, also after hobbs stop ended it; nothing
// is left behind.
func TestDetach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "detach")
	t.Cleanup(func() { e.hobbs(nil, "stop", name) })
	args := append([]string{"run", "--detach"}, e.runArgs(name, "sh", "-c", "echo detached-started; sleep 600")[1:]...)
	r := e.hobbs(nil, args...)
	t.Logf("run --detach: exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
	if r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Fatalf("run --detach: exit %d, stdout %q; want 0 and the name", r.code, r.stdout)
	}
	if ps := e.hobbs(nil, "ps"); !strings.Contains(ps.stdout, name) {
		t.Fatalf("hobbs ps does not list the detached session:\n%s", ps.stdout)
	}
	x := e.hobbs(nil, "exec", name, "--", "sh", "-c", `echo "in-session $HOBBS_CONTEXT proxy=${HTTPS_PROXY:+set} $(pwd)"; exit 7`)
	if x.code != 7 || !strings.Contains(x.stdout, "in-session container proxy=set /home/dev/hobbs/workspace") {
		t.Errorf("hobbs exec: exit %d, stdout %q; want 7 and the session's context, proxy and workspace", x.code, x.stdout)
	}
	var logs result
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if logs = e.hobbs(nil, "logs", name); strings.Contains(logs.stdout, "detached-started") {
			break
		}
	}
	if !strings.Contains(logs.stdout, "detached-started") {
		t.Errorf("hobbs logs of the running session: %q %q", logs.stdout, logs.stderr)
	}
	if s := e.hobbs(nil, "stop", name); s.code != 0 {
		t.Fatalf("hobbs stop: %d %s", s.code, s.stderr)
	}
	gone := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !gone; time.Sleep(250 * time.Millisecond) {
		gone = strings.TrimSpace(docker(t, "ps", "-a", "--filter", "label=dev.hobbs.session="+name, "--format", "{{.Names}}")) == ""
	}
	if !gone {
		t.Fatalf("containers of the stopped session are left")
	}
	// After the end: the launcher's output, the stop included.
	var after result
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if after = e.hobbs(nil, "logs", name); strings.Contains(after.stdout, "stopped by hobbs stop") {
			break
		}
	}
	if after.code != 0 || !strings.Contains(after.stdout, "detached-started") || !strings.Contains(after.stdout, "stopped by hobbs stop") {
		t.Errorf("hobbs logs after the end: exit %d\n%s%s", after.code, after.stdout, after.stderr)
	}
	if x := e.hobbs(nil, "exec", name, "--", "true"); x.code == 0 {
		t.Error("hobbs exec into an ended session succeeded")
	}
}
