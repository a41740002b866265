package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunExitStatus: hobbs run exits with the command's status, and a second run
// with unchanged inputs does no build step.
func TestRunExitStatus(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	r := e.hobbs(nil, e.runArgs(sessionName(t, "exit"), "sh", "-c", "echo out; echo err >&2; exit 7")...)
	if r.code != 7 {
		t.Errorf("exit code %d, want 7\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "out\n") || !strings.Contains(r.stderr, "err\n") {
		t.Errorf("streams not passed through: stdout %q stderr %q", r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "building") {
		t.Errorf("built although nothing changed:\n%s", r.stderr)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after exit: %v", left)
	}
	// Without an instance, run creates one first (non-interactively).
	fresh := filepath.Join(e.dir, "fresh")
	instMu.Lock()
	instanceIDs = append(instanceIDs, instanceID(fresh))
	instMu.Unlock()
	r = hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + fresh}, e.runArgs(sessionName(t, "fresh"), "true")...)
	if r.code != 0 || !strings.Contains(r.stderr, "created instance "+fresh) || !exists(filepath.Join(fresh, "foundation.md")) {
		t.Errorf("run without an instance: exit %d\n%s", r.code, r.stderr)
	}
	_ = exec.Command("docker", "volume", "rm", "-f", "hobbs-claude-"+instanceID(fresh)).Run()
	// doctor --deep checks the engine, with this image, and leaves nothing.
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "image: "+image+"\n")
	r = e.hobbs(nil, "doctor", "--deep")
	for _, want := range []string{"ok    engine.version "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor --deep lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after doctor: %v", left)
	}
}

// TestInterrupt: SIGINT mid-run stops the session, removes everything it
// created and exits 130.
func TestInterrupt(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	c := e.command(nil, e.runArgs(sessionName(t, "int"), "sh", "-c", "touch /home/dev/hobbs/workspace/.started; sleep 120")...)
	var errb strings.Builder
	c.Stderr = &errb
	e.start(t, c)
	waitFor(t, 60*time.Second, "the session to start", func() bool { return exists(filepath.Join(e.ws, ".started")) })
	// Three containers (the agent, its proxy, and the never-started helper
	// the end reads the Claude Code user scope from), the socket volume and
	// the session's six layers' overlay volumes (the proxy is on the
	// engine's default network: no network of the session's own).
	if left := e.leftovers(t); len(left) != 10 {
		t.Errorf("expected 3 containers, the socket volume and 6 layer volumes while running, got %v", left)
	}
	t0 := time.Now()
	_ = c.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("hobbs run did not exit within 30s of SIGINT\n%s", errb.String())
	}
	t.Logf("exited %v after SIGINT", time.Since(t0).Round(time.Millisecond))
	if code := c.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d after SIGINT, want 130\n%s", code, errb.String())
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after SIGINT: %v", left)
	}
}

// TestCrashLeftovers: a launcher killed outright leaves labelled objects;
// ps shows them as an orphan and stop --all removes them.
func TestCrashLeftovers(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "crash")
	c := e.command(nil, e.runArgs(name, "sh", "-c", "echo hello-from-the-agent; touch /home/dev/hobbs/workspace/.started; sleep 120")...)
	e.start(t, c)
	waitFor(t, 60*time.Second, "the session to start", func() bool { return exists(filepath.Join(e.ws, ".started")) })
	// logs and attach --shell reach the running session.
	if r := e.hobbs(nil, "logs", name); r.code != 0 || !strings.Contains(r.stdout, "hello-from-the-agent") {
		t.Errorf("logs: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := e.hobbs(nil, "logs", "--proxy", name); r.code != 0 {
		t.Errorf("logs --proxy: exit %d %s", r.code, r.stderr)
	}
	if r := e.hobbs([]byte("id -u; pwd; exit 4\n"), "attach", "--shell", name); r.code != 4 ||
		!strings.Contains(r.stdout, strconv.Itoa(testUID)+"\n/home/dev/hobbs/workspace") {
		t.Errorf("attach --shell: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := e.hobbs(nil, "logs", "no-such-session"); r.code != 1 || !strings.Contains(r.stderr, "no running session") {
		t.Errorf("logs of an unknown session: exit %d %s", r.code, r.stderr)
	}
	r := e.hobbs(nil, "ps", "--json")
	var list []struct {
		Name       string `json:"name"`
		Status     string `json:"status"`
		OwnerAlive bool   `json:"owner_alive"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].Name != name ||
		list[0].Status != "running" || !list[0].OwnerAlive {
		t.Errorf("ps --json while running: %v %s", err, r.stdout)
	}
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	r = e.hobbs(nil, "ps", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].OwnerAlive {
		t.Errorf("ps --json after the crash: %v %s", err, r.stdout)
	}
	// What the crash left is labelled, the socket volume among it (the
	// engine made it from the containers' --mount, options and labels
	// included): the next run finds it by its labels.
	var run string
	for _, l := range e.leftovers(t) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "volume" && strings.HasPrefix(f[1], name+"-run-") && f[2] == "run" {
			run = f[1]
		}
	}
	if run == "" {
		t.Errorf("no labelled socket volume among the leftovers: %v (all volumes: %s)", e.leftovers(t), docker(t, "volume", "ls"))
	} else if o := docker(t, "volume", "inspect", "--format", "{{.Options.type}} {{.Options.o}}", run); o != "tmpfs size=64k,mode=1777" {
		t.Errorf("socket volume options %q", o)
	}
	if l := docker(t, "volume", "inspect", "--format", `{{index .Labels "dev.hobbs.role"}}`, "hobbs-claude-"+instanceID(e.inst)); l != "claude-state" {
		t.Errorf("the Claude state volume is labelled %q", l)
	}
	r = e.hobbs(nil, "ps")
	if !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "(orphan)") {
		t.Errorf("ps after the crash:\n%s", r.stdout)
	}
	// The crashed launcher's note survives it (it tells the next run to look
	// for leftovers).
	notes := filepath.Join(e.home, ".local", "state", "hobbs", "sessions", instanceID(e.inst))
	if !exists(filepath.Join(notes, name)) {
		t.Errorf("no session note for the crashed session in %s", notes)
	}
	// The next run of the instance removes the orphan first.
	trace := func(args ...string) result {
		return hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst, "HOBBS_TRACE=1"}, args...)
	}
	r = trace(e.runArgs(sessionName(t, "after"), "true")...)
	if r.code != 0 {
		t.Fatalf("run after the crash: %d %s", r.code, r.stderr)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the next run: %v\n%s", left, r.stderr)
	}
	if !strings.Contains(r.stderr, "call ps ") {
		t.Errorf("the run after a crash did not look for leftovers:\n%s", r.stderr)
	}
	// Both notes are gone: the next run skips the lookup.
	if entries, _ := os.ReadDir(notes); len(entries) != 0 {
		t.Errorf("session notes left after a clean run: %v", entries)
	}
	r = trace(e.runArgs(sessionName(t, "quiet"), "true")...)
	if r.code != 0 || strings.Contains(r.stderr, "call ps ") {
		t.Errorf("a run after clean runs looked for leftovers (exit %d):\n%s", r.code, r.stderr)
	}

	// Another crash; stop --all removes it.
	_ = os.Remove(filepath.Join(e.ws, ".started"))
	c = e.command(nil, e.runArgs(name, "sh", "-c", "touch /home/dev/hobbs/workspace/.started; sleep 120")...)
	e.start(t, c)
	waitFor(t, 60*time.Second, "the session to start", func() bool { return exists(filepath.Join(e.ws, ".started")) })
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	r = e.hobbs(nil, "stop", "--all")
	if r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Errorf("stop --all: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after stop --all: %v", left)
	}
	if exists(filepath.Join(notes, name)) {
		t.Errorf("stop --all kept the note of the session it removed")
	}
	if r := e.hobbs(nil, "stop", name); r.code != 1 {
		t.Errorf("stop of a gone session: exit %d, want 1", r.code)
	}
	_ = os.Remove(filepath.Join(e.ws, ".started"))
}

// TestProxyFailure: with a policy the proxy refuses, the session fails with
// the proxy's own message, the agent's command never runs, and nothing is
// left behind.
func TestProxyFailure(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	// A policy the proxy would refuse: the session ends on the host, with
	// file:line, before anything is created.
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains:\n  - \"*\"\nnot_a_key: 1\n")
	r := e.hobbs(nil, e.runArgs(sessionName(t, "badpolicy"), "touch", "/home/dev/hobbs/workspace/ran")...)
	if r.code != 2 {
		t.Errorf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "egress policy is invalid") || !strings.Contains(r.stderr, "policy.yaml:3") {
		t.Errorf("stderr does not explain the policy error:\n%s", r.stderr)
	}
	if exists(filepath.Join(e.ws, "ran")) {
		t.Errorf("the agent's command ran without a proxy")
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the failure: %v", left)
	}

	// A proxy that dies at start (its audit log cannot be opened): the
	// agent, whose request waits in its relay, is stopped; the session ends
	// with the proxy's own output.
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains: [allowed.test]\n")
	auditLog := filepath.Join(e.inst, "logs", "egress", "audit.log")
	writeFile(t, auditLog, "")
	if err := os.Chmod(auditLog, 0o444); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(auditLog, 0o644)
	start := time.Now()
	r = e.hobbs(nil, e.runArgs(sessionName(t, "badproxy"), "sh", "-c",
		"netprobe get http://allowed.test/ > /home/dev/hobbs/workspace/got; sleep 60")...)
	if r.code != 1 || !strings.Contains(r.stderr, "hobbs: egress proxy failed") || !strings.Contains(r.stderr, "audit") {
		t.Errorf("exit %d, want 1 with the proxy's failure:\n%s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the session took %v to end after its proxy died", d)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the failure: %v", left)
	}

	// An egress_network that does not exist (the engine checks it only when
	// the proxy starts): exit 3, naming the setting; nothing left.
	os.Chmod(auditLog, 0o644)
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "egress_network: e2e-"+runID+"-no-such-net\n")
	r = e.hobbs(nil, e.runArgs(sessionName(t, "nonet"), "sh", "-c", "sleep 60")...)
	if r.code != 3 || !strings.Contains(r.stderr, "egress network e2e-"+runID+"-no-such-net does not exist") ||
		!strings.Contains(r.stderr, "egress_network") {
		t.Errorf("missing egress network: exit %d, want 3 naming it:\n%s", r.code, r.stderr)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the missing network: %v", left)
	}
}

// TestTTY: on a terminal the agent gets one (run under script(1), which
// gives hobbs a pseudo-terminal); without one it does not.
func TestTTY(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) (util-linux/bsdutils) is needed to give hobbs a terminal: %v", err)
	}
	line := hobbsBin
	for _, a := range e.runArgs(sessionName(t, "tty"), "sh", "-c", "tty; exit 3") {
		line += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	c := commandAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "-qec", line, "/dev/null")
	c.Path, c.Args[0] = scriptBin, scriptBin
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 3 || !strings.Contains(string(out), "/dev/pts/") {
		t.Errorf("on a terminal: exit %d, output:\n%s", code, out)
	}
	r := e.hobbs(nil, e.runArgs(sessionName(t, "notty"), "sh", "-c", "tty; exit 0")...)
	if r.code != 0 || !strings.Contains(r.stdout, "not a tty") {
		t.Errorf("without a terminal: exit %d stdout %q", r.code, r.stdout)
	}
}

// TestNameClash: a session name whose container or (egress_network:
// session) network exists already is refused, and the existing objects are left alone.
func TestNameClash(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := sessionName(t, "clash")
	docker(t, "create", "--name", name, "--label", "hobbs-e2e="+runID, baseImage, "true")
	r := e.hobbs(nil, e.runArgs(name, "true")...)
	if r.code != 2 || !strings.Contains(r.stderr, "exists already") {
		t.Errorf("container clash: exit %d\n%s", r.code, r.stderr)
	}
	if out := docker(t, "ps", "-aq", "--filter", "name=^/"+name+"$"); out == "" {
		t.Errorf("the existing container %s was removed", name)
	}
	docker(t, "rm", "-f", name)
	// A session network of its own (egress_network: session) whose name is
	// taken.
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "egress_network: session\n")
	name2 := sessionName(t, "clash2")
	docker(t, "network", "create", "--label", "hobbs-e2e="+runID, name2+"-egress")
	r = e.hobbs(nil, e.runArgs(name2, "true")...)
	if r.code == 0 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("network clash: exit %d\n%s", r.code, r.stderr)
	}
	if out := docker(t, "network", "ls", "-q", "--filter", "name=^"+name2+"-egress$"); out == "" {
		t.Errorf("the existing network %s-egress was removed", name2)
	}
	docker(t, "network", "rm", name2+"-egress")
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the clashes: %v", left)
	}
}
