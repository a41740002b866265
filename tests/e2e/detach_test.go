package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	stopAndCheckGone(t, e, name)
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

// terminalRun is hobbs run on a terminal (script(1) gives it one), its
// input a pipe the test types into, its output gathered.
type terminalRun struct {
	c   *exec.Cmd
	in  io.WriteCloser
	mu  sync.Mutex
	out strings.Builder
}

func startTerminalRun(t *testing.T, e *env, name string, cmd ...string) *terminalRun {
	t.Helper()
	return startTerminal(t, e, e.runArgs(name, cmd...)...)
}

// startTerminal starts hobbs with args on a terminal, as startTerminalRun
// does hobbs run.
func startTerminal(t *testing.T, e *env, args ...string) *terminalRun {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) is needed to give hobbs a terminal: %v", err)
	}
	line := hobbsBin
	for _, a := range args {
		line += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	r := &terminalRun{c: commandAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "-qefc", line, "/dev/null")}
	r.c.Path, r.c.Args[0] = scriptBin, scriptBin
	if r.in, err = r.c.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	r.c.Stdout = writerFunc(func(p []byte) (int, error) { r.mu.Lock(); defer r.mu.Unlock(); return r.out.Write(p) })
	r.c.Stderr = r.c.Stdout
	if err := r.c.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *terminalRun) output() string { r.mu.Lock(); defer r.mu.Unlock(); return r.out.String() }

// waitFor waits until the output shows s.
func (r *terminalRun) waitFor(t *testing.T, s string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(r.output(), s) {
			return
		}
	}
	r.c.Process.Kill()
	r.c.Wait()
	t.Fatalf("no %q on the terminal:\n%s", s, r.output())
}

// end waits for hobbs run to return: its exit code.
func (r *terminalRun) end(t *testing.T, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.c.Wait() }()
	select {
	case err := <-done:
		r.in.Close()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(d):
		r.c.Process.Kill()
		t.Fatalf("hobbs run did not return:\n%s", r.output())
	}
	return -1
}

// TestTerminalDetach: hobbs run on a terminal; Ctrl-P Ctrl-Q detaches the
// terminal and the session goes on (its launcher runs in the background);
// hobbs stop ends it and nothing is left. A stop of a session attached to a
// terminal ends that hobbs run with 143 and says so.
func TestTerminalDetach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "ttydetach")
	t.Cleanup(func() { e.hobbs(nil, "stop", name) })
	r := startTerminalRun(t, e, name, "sh", "-c", "echo agent-up; sleep 600")
	r.waitFor(t, "agent-up", 90*time.Second)
	if note := "attached to session " + name + ": Ctrl-P Ctrl-Q detaches and the session goes on (hobbs attach " + name + " comes back)"; strings.Count(r.output(), note) != 1 {
		t.Errorf("hobbs run on a terminal does not say once how to detach and come back (%q):\n%s", note, r.output())
	}
	r.in.Write([]byte{0x10, 0x11}) // Ctrl-P Ctrl-Q
	if code := r.end(t, 30*time.Second); code != 0 || !strings.Contains(r.output(), "detached from session "+name) {
		t.Fatalf("hobbs run after Ctrl-P Ctrl-Q: exit %d\n%s", code, r.output())
	}
	time.Sleep(time.Second)
	if ps := e.hobbs(nil, "ps"); !strings.Contains(ps.stdout, name) {
		t.Fatalf("the session did not go on after the detach:\n%s", ps.stdout)
	}
	if x := e.hobbs(nil, "exec", name, "--", "echo", "still-here"); x.code != 0 || !strings.Contains(x.stdout, "still-here") {
		t.Errorf("exec into the detached session: %d %q", x.code, x.stdout)
	}
	stopAndCheckGone(t, e, name)

	// Stopped while attached: 143 and the reason.
	name2 := sessionName(t, "ttystop")
	r = startTerminalRun(t, e, name2, "sh", "-c", "echo agent-up; sleep 600")
	r.waitFor(t, "agent-up", 90*time.Second)
	if s := e.hobbs(nil, "stop", name2); s.code != 0 {
		t.Fatalf("hobbs stop: %d %s", s.code, s.stderr)
	}
	if code := r.end(t, 60*time.Second); code != 143 || !strings.Contains(r.output(), "stopped by hobbs stop") {
		t.Errorf("a stopped terminal run: exit %d\n%s", code, r.output())
	}
}

// stopAndCheckGone stops session name and fails unless its containers are
// gone within 30 s.
func stopAndCheckGone(t *testing.T, e *env, name string) {
	t.Helper()
	if s := e.hobbs(nil, "stop", name); s.code != 0 {
		t.Fatalf("hobbs stop: %d %s", s.code, s.stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if strings.TrimSpace(docker(t, "ps", "-a", "--filter", "label=dev.hobbs.session="+name, "--format", "{{.Names}}")) == "" {
			return
		}
	}
	t.Fatalf("containers of the stopped session %s are left", name)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestAttachOnTerminal: hobbs attach without a terminal is refused (exit
// 2) with the commands that work without one; on a terminal it says once
// how to detach and come back, with no stray byte; Ctrl-P Ctrl-Q detaches it (exit 0) and the session goes
// on; attached again, a hobbs stop from elsewhere ends it, and hobbs
// attach says so and exits 143.
func TestAttachOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "attach")
	t.Cleanup(func() { e.hobbs(nil, "stop", name) })
	args := append([]string{"run", "--detach"}, e.runArgs(name, "sh", "-c", "echo agent-up; while true; do read -r l && echo \"got $l\"; done")[1:]...)
	if r := e.hobbs(nil, args...); r.code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", r.code, r.stderr)
	}
	note := "attached to session " + name + ": Ctrl-P Ctrl-Q detaches and the session goes on (hobbs attach " + name + " comes back)"

	// Without a terminal: refused, with the ways that work without one.
	if r := e.hobbs(nil, "attach", name); r.code != 2 || !strings.Contains(r.stderr, "needs a terminal") ||
		!strings.Contains(r.stderr, "hobbs logs "+name) || strings.Contains(r.stderr, "detached from") {
		t.Errorf("hobbs attach without a terminal: exit %d\n%s", r.code, r.stderr)
	}

	a := startTerminal(t, e, "attach", name)
	a.waitFor(t, note, 30*time.Second)
	a.in.Write([]byte("hello\r"))
	a.waitFor(t, "got hello", 30*time.Second)
	a.in.Write([]byte{0x10, 0x11}) // Ctrl-P Ctrl-Q
	if code := a.end(t, 30*time.Second); code != 0 || !strings.Contains(a.output(), "detached from session "+name+", which goes on") ||
		strings.Count(a.output(), note) != 1 {
		t.Fatalf("hobbs attach after Ctrl-P Ctrl-Q: exit %d\n%s", code, a.output())
	}
	if strings.Contains(a.output(), "\x00") {
		t.Errorf("a NUL byte on the terminal after the detach: %q", a.output())
	}

	a = startTerminal(t, e, "attach", name)
	a.waitFor(t, note, 30*time.Second)
	if s := e.hobbs(nil, "stop", name); s.code != 0 {
		t.Fatalf("hobbs stop: %d %s", s.code, s.stderr)
	}
	if code := a.end(t, 60*time.Second); code != 143 ||
		!strings.Contains(a.output(), "session "+name+" ended while attached (exit 143: stopped from elsewhere, by hobbs stop or the engine)") {
		t.Errorf("hobbs attach to a session stopped elsewhere: exit %d\n%s", code, a.output())
	}
}

// TestFirstRunOnTerminal: the first hobbs run on a terminal, with no
// instance yet, asks the foundation questions before its launcher goes to
// the background (where there is no terminal to ask on), as hobbs init
// does; then the session runs.
func TestFirstRunOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fresh := *e
	fresh.inst = filepath.Join(e.dir, "fresh")
	instMu.Lock()
	instanceIDs = append(instanceIDs, instanceID(fresh.inst))
	instMu.Unlock()
	fresh.removeVolume(t)
	r := startTerminalRun(t, &fresh, sessionName(t, "first"), "sh", "-c", "echo first-session-up")
	r.waitFor(t, "Let's write your foundation", 30*time.Second)
	for i, answer := range []string{"Honesty; Curiosity\r", "\r", "\r"} {
		// Each answer once its question's prompt ("\n> ") is shown.
		waitFor(t, 30*time.Second, fmt.Sprintf("question %d", i+1), func() bool { return strings.Count(r.output(), "\n> ") > i })
		r.in.Write([]byte(answer))
	}
	if code := r.end(t, 2*time.Minute); code != 0 || !strings.Contains(r.output(), "first-session-up") {
		t.Fatalf("the first hobbs run on a terminal: exit %d\n%s", code, r.output())
	}
	f, err := os.ReadFile(filepath.Join(fresh.inst, "foundation.md"))
	if err != nil || !strings.Contains(string(f), "- Honesty") {
		t.Errorf("foundation.md does not hold the answer: %v\n%s", err, f)
	}
}

// TestSignInNotice: the first session on a state volume without a sign-in
// says, before Claude Code starts, that it will ask and what to do; once
// the volume holds a sign-in (.credentials.json), nothing is said.
func TestSignInNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	const notice = "Claude Code is not signed in on this instance yet: type /login"
	r := startTerminalRun(t, e, sessionName(t, "signin"))
	if code := r.end(t, 2*time.Minute); code != 0 || strings.Count(r.output(), notice) != 1 || !strings.Contains(r.output(), "fake-claude: ") {
		t.Fatalf("the first session: exit %d, want the notice once before Claude Code:\n%s", code, r.output())
	}
	if w := e.hobbs(nil, e.runArgs(sessionName(t, "signin-w"), "sh", "-c", `echo '{"claudeAiOauth":{}}' > "$CLAUDE_CONFIG_DIR/.credentials.json"`)...); w.code != 0 {
		t.Fatalf("write the sign-in: %d %s", w.code, w.stderr)
	}
	r = startTerminalRun(t, e, sessionName(t, "signin-2"))
	if code := r.end(t, 2*time.Minute); code != 0 || strings.Contains(r.output(), notice) {
		t.Errorf("a signed-in session: exit %d, and no notice wanted:\n%s", code, r.output())
	}
}
