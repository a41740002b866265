package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// podmanUser is the account TestPodmanSession runs rootless podman as.
// Rootless podman maps a container's users through the account's
// subordinate ids (/etc/subuid, /etc/subgid), found by its name: a uid
// without a passwd entry, like the other tests' user, cannot have them.
const podmanUser = "hobbs-e2e-podman"

// TestPodmanSession runs a session on rootless podman (Debian 12's 4.3) as
// an unprivileged user: the image comes from Docker (docker save | podman
// load, under a localhost/ name so hobbs runs it as it is), the agent
// reaches the proxy (its default deny answers 403), a file it writes in the
// workspace is the user's, and nothing of the session is left in podman's
// store. It needs root, to make the user (kept for later runs) and to open
// /dev/net/tun to it (slirp4netns gives the proxy its network) where the
// machine has it closed; with CI=true a missing podman fails the test.
func TestPodmanSession(t *testing.T) {
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
	tooltest.Need(t, "podman")
	if os.Getuid() != 0 {
		tooltest.Note(t.Name(), "needs root (makes the user "+podmanUser+" and opens /dev/net/tun to it)", "run the e2e tests as root, as CI does")
		t.Skip("needs root: makes the user " + podmanUser + " and opens /dev/net/tun to it")
	}
	t0 := time.Now()
	u := ensurePodmanUser(t)
	openTun(t)

	dir, err := os.MkdirTemp(tmpRoot, "podman-")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	inst := filepath.Join(dir, "instance")
	ws := filepath.Join(dir, "ws")
	run := filepath.Join(dir, "run")
	for _, d := range []string{dir, home, ws, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	as := func(stdin []byte, name string, args ...string) result {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir = home
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C", "XDG_RUNTIME_DIR=" + run,
			"HOBBS_HOME=" + inst, "HOBBS_DOCKER=podman", "HOBBS_TRACE=1"}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
		if stdin != nil {
			c.Stdin = bytes.NewReader(stdin)
		}
		var so, se bytes.Buffer
		c.Stdout, c.Stderr = &so, &se
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
			se.WriteString(err.Error())
		}
		return result{code: code, stdout: so.String(), stderr: se.String()}
	}
	id := instanceID(inst)
	ref := "localhost/hobbs-e2e-podman-" + runID + ":test"
	t.Cleanup(func() {
		for _, q := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}} {
			out := as(nil, "podman", append(q, "--filter", "label=dev.hobbs.instance="+id)...).stdout
			if ids := strings.Fields(out); len(ids) > 0 {
				as(nil, "podman", append([]string{q[0], "rm", "-f"}, ids...)...)
			}
		}
		as(nil, "podman", "volume", "rm", "-f", "hobbs-claude-"+id)
		as(nil, "podman", "image", "rm", "-f", ref)
		_ = exec.Command("docker", "image", "rm", ref).Run()
	})

	docker(t, "tag", image, ref)
	save := exec.Command("docker", "save", ref)
	tar, err := save.Output()
	if err != nil {
		t.Fatalf("docker save: %v", err)
	}
	if r := as(tar, "podman", "load"); r.code != 0 {
		t.Fatalf("podman load: %d\n%s", r.code, r.stderr)
	}
	if r := as(nil, hobbsBin, "init", "--no-input"); r.code != 0 {
		t.Fatalf("hobbs init: %d %s", r.code, r.stderr)
	}

	// doctor with the real podman: the engine, its init binary, the image
	// config.yaml names (podman says "image not known" of a missing one).
	r := as(nil, hobbsBin, "doctor", "--json")
	if !strings.Contains(r.stdout, `"message": "image hobbs:local-`) || !strings.Contains(r.stdout, "runtime base hobbs-runtime:latest is missing") {
		t.Errorf("doctor: the missing default image and base are not reported:\n%s", r.stdout)
	}
	cfg := filepath.Join(inst, "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("\nimage: \"\"\n"), []byte("\nimage: \""+ref+"\"\n"), 1)
	b = bytes.Replace(b, []byte("\nworkspace: \"~/hobbs-workspace\"\n"), []byte("\nworkspace: \""+ws+"\"\n"), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = as(nil, hobbsBin, "doctor", "--json")
	for _, want := range []string{`"check": "engine.init"`, `"message": "podman init binary: `, `"message": "image ` + ref + ` is here"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor: no %s in\n%s", want, r.stdout)
		}
	}

	probe := `id -u; wget -S -O- http://example.com/ 2>&1; touch /home/dev/hobbs/workspace/from-podman; ` +
		`echo '{"claudeAiOauth":{"accessToken":"podman-e2e"}}' > "$CLAUDE_CONFIG_DIR/.credentials.json"`
	r = as(nil, hobbsBin, "run", "--image", ref, "--workspace", ws, "--name", "e2e-"+runID+"-podman", "--", "sh", "-c", probe)
	if r.code != 0 {
		t.Fatalf("hobbs run on podman: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, strconv.Itoa(u.uid)+"\n") {
		t.Errorf("the agent's uid is not the user's (%d):\n%s", u.uid, r.stdout)
	}
	if !strings.Contains(r.stdout, "403 Forbidden") {
		t.Errorf("the proxy's default deny did not answer:\n%s\n%s", r.stdout, r.stderr)
	}
	// The end reads the user scope from the proxy's listing (it mounts
	// the state volume read-only, in the agent's user namespace).
	if !strings.Contains(r.stderr, "session: the user scope listed by the proxy") {
		t.Errorf("the end did not take the proxy's listing of the state volume:\n%s", r.stderr)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, "from-podman"), &st); err != nil || int(st.Uid) != u.uid {
		t.Errorf("the file the agent wrote: %v, owner %d, want %d", err, st.Uid, u.uid)
	}
	// A headless run on podman: Claude Code state of its own (a tmpfs the
	// user owns) and the sign-in the session left, read by the seed.
	for p, content := range map[string]string{
		filepath.Join(inst, "playbooks", "podrun.md"): "---\ntitle: podrun\nstage: autonomous\ntags: []\ncreated: 2026-01-01\n" +
			"updated: 2026-01-01\nlast_reviewed: 2026-01-01\nrun:\n  hosts: []\n  secrets: []\n  tools: []\n  timeout: 2m\n---\n# podrun\n",
		filepath.Join(ws, ".fake-claude-run"): "touch \"$CLAUDE_CONFIG_DIR/run-was-here\"\necho '## Outcome'\necho ok\n",
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	if r := as(nil, hobbsBin, "playbook", "approve", "podrun"); r.code != 0 {
		t.Fatalf("approve: %s", r.stderr)
	}
	r = as(nil, hobbsBin, "playbook", "run", "podrun")
	if r.code != 0 || !strings.Contains(r.stderr, `fake-claude: credentials {"claudeAiOauth":{"accessToken":"podman-e2e"}}`) ||
		!strings.Contains(r.stderr, "task_") || !strings.Contains(r.stderr, " ok (") {
		t.Errorf("a headless run on podman: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := as(nil, hobbsBin, "run", "--image", ref, "--workspace", ws, "--name", "e2e-"+runID+"-podman2", "--", "ls", "-A", "/home/dev/.claude"); r.code != 0 ||
		strings.Contains(r.stdout, "run-was-here") || !strings.Contains(r.stdout, ".credentials.json") {
		t.Errorf("the state volume after the run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, q := range [][]string{
		{"ps", "-a", "--format", "{{.Names}}", "--filter", "label=dev.hobbs.instance=" + id},
		{"volume", "ls", "--format", "{{.Name}}", "--filter", "label=dev.hobbs.instance=" + id},
	} {
		for _, l := range strings.Fields(as(nil, "podman", q...).stdout) {
			if l != "hobbs-claude-"+id {
				t.Errorf("left behind: %s %s", q[0], l)
			}
		}
	}
	t.Logf("podman session test in %v", time.Since(t0).Round(time.Millisecond))
}

type account struct{ uid, gid int }

// ensurePodmanUser makes podmanUser (useradd gives it subordinate ids)
// unless it exists.
func ensurePodmanUser(t *testing.T) account {
	t.Helper()
	u, err := user.Lookup(podmanUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", podmanUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", podmanUser, err, out)
		}
		if u, err = user.Lookup(podmanUser); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		b, _ := os.ReadFile(f)
		if !bytes.Contains(b, []byte("\n"+podmanUser+":")) && !bytes.HasPrefix(b, []byte(podmanUser+":")) {
			t.Fatalf("%s has no range for %s (useradd gives one when SUB_UID_COUNT in /etc/login.defs is not 0)", f, podmanUser)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return account{uid, gid}
}

// openTun gives every user /dev/net/tun, as Debian's udev rules do, for
// the test's duration: rootless podman's slirp4netns opens it for a
// container's network. Some virtual machines have it 0600.
func openTun(t *testing.T) {
	t.Helper()
	const tun = "/dev/net/tun"
	fi, err := os.Stat(tun)
	if err != nil {
		t.Fatalf("%s: %v (rootless podman's networks need it)", tun, err)
	}
	if mode := fi.Mode().Perm(); mode&0o006 != 0o006 {
		if err := os.Chmod(tun, 0o666); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(tun, mode) })
		t.Log(fmt.Sprintf("%s was %04o: 0666 for the test", tun, mode))
	}
}
