// Package e2e runs Hobbs sessions on the real container engine: the real
// hobbs binary (built here with CGO_ENABLED=0), dist/Dockerfile built on a
// small base image made offline from Debian's busybox-static package, and
// `hobbs run` as an unprivileged user. Only Claude Code is faked (see
// fake-claude.sh). Every container, network and volume these tests create is
// named after the run and removed at the end.
//
// The suite needs Docker Engine, apt-get and dpkg-deb (Debian/Ubuntu). It
// skips only with -short; with CI=true a missing engine is a failure.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	repoRoot  string // the repository
	tmpRoot   string // this run's scratch directory (world-traversable)
	hobbsBin  string // the binary under test
	baseImage string // busybox base, cached across runs by content hash
	image     string // the Hobbs image built for this run
	runID     string // unique suffix of this run's objects
	testUID   = os.Getuid()
	testGID   = os.Getgid()
	groups    []uint32 // supplementary groups of the test user (docker socket)
	setupErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short")
		os.Exit(0)
	}
	code := 1
	func() {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(os.Stderr, "e2e setup panic: %v\n", r)
			}
		}()
		setupErr = setup()
		if setupErr != nil {
			fmt.Fprintf(os.Stderr, "e2e setup: %v\n", setupErr)
		}
		code = m.Run()
	}()
	teardown()
	if setupErr != nil {
		code = 1
	}
	os.Exit(code)
}

func setup() error {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runID = hex.EncodeToString(b)
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	repoRoot = filepath.Dir(strings.TrimSpace(string(out)))
	if err := exec.Command("docker", "info").Run(); err != nil {
		return fmt.Errorf("docker engine not reachable (docker info: %v)", err)
	}
	tmpRoot, err = os.MkdirTemp("", "hobbs-e2e-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmpRoot, 0o755); err != nil {
		return err
	}
	if err := pickUser(); err != nil {
		return err
	}
	t0 := time.Now()
	hobbsBin = filepath.Join(tmpRoot, "hobbs")
	build := exec.Command("go", "build", "-trimpath", "-o", hobbsBin, "./cmd/hobbs")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	fmt.Printf("e2e: built hobbs in %v\n", time.Since(t0).Round(time.Millisecond))
	netprobe := filepath.Join(tmpRoot, "netprobe")
	build = exec.Command("go", "build", "-trimpath", "-o", netprobe, "./tests/e2e/netprobe")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build netprobe: %v\n%s", err, out)
	}
	t0 = time.Now()
	if baseImage, err = makeBase(netprobe); err != nil {
		return fmt.Errorf("base image: %w", err)
	}
	fmt.Printf("e2e: base image %s in %v\n", baseImage, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	image = "hobbs-e2e-" + runID + ":test"
	res := hobbsAs(nil, tmpRoot, nil, "build", "--base", baseImage, "--tag", image)
	if res.code != 0 {
		return fmt.Errorf("hobbs build: exit %d\n%s", res.code, res.stderr)
	}
	fmt.Printf("e2e: hobbs build in %v\n", time.Since(t0).Round(time.Millisecond))
	return nil
}

// instanceIDs are the instances this run created; teardown removes whatever
// hobbs objects of theirs a failed test left.
var (
	instMu      sync.Mutex
	instanceIDs []string
)

func teardown() {
	instMu.Lock()
	for _, id := range instanceIDs {
		f := "label=dev.hobbs.instance=" + id
		if out, _ := exec.Command("docker", "ps", "-aq", "--filter", f).Output(); len(strings.Fields(string(out))) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, strings.Fields(string(out))...)...).Run()
		}
		if out, _ := exec.Command("docker", "network", "ls", "-q", "--filter", f).Output(); len(strings.Fields(string(out))) > 0 {
			_ = exec.Command("docker", append([]string{"network", "rm"}, strings.Fields(string(out))...)...).Run()
		}
		_ = exec.Command("docker", "volume", "rm", "-f", "hobbs-claude-"+id).Run()
	}
	instMu.Unlock()
	if runID != "" {
		// Whatever a failed test left: containers and networks of this run.
		for _, kind := range []string{"container", "network", "volume"} {
			out, _ := exec.Command("docker", kind, "ls", "-aq", "--filter", "label=hobbs-e2e="+runID).Output()
			if kind != "container" {
				out, _ = exec.Command("docker", kind, "ls", "-q", "--filter", "label=hobbs-e2e="+runID).Output()
			}
			if ids := strings.Fields(string(out)); len(ids) > 0 {
				args := append([]string{kind, "rm", "-f"}, ids...)
				if kind == "network" {
					args = append([]string{kind, "rm"}, ids...)
				}
				_ = exec.Command("docker", args...).Run()
			}
		}
	}
	if image != "" {
		_ = exec.Command("docker", "image", "rm", "-f", image).Run()
	}
	if tmpRoot != "" {
		_ = os.RemoveAll(tmpRoot)
	}
}

// pickUser chooses who runs hobbs: the test's own user, or, when the tests
// run as root (CI), uid 4242 — a uid with no passwd entry — with the docker
// socket's group so it may use the engine.
func pickUser() error {
	if os.Getuid() != 0 {
		return nil
	}
	testUID, testGID = 4242, 4242
	for {
		if _, err := user.LookupId(strconv.Itoa(testUID)); err != nil {
			break
		}
		testUID++
		testGID++
	}
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		sock = strings.TrimPrefix(h, "unix://")
	}
	fi, err := os.Stat(sock)
	if err != nil {
		return fmt.Errorf("docker socket: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm()&0o060 != 0o060 {
		return fmt.Errorf("%s is not group read-write; cannot run hobbs as an unprivileged user", sock)
	}
	groups = []uint32{st.Gid}
	return nil
}

// mkdirs creates directories owned by the test user.
func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			if err := os.Chown(d, testUID, testGID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeFile writes a file owned by the test user.
func writeFile(t testing.TB, p, content string) {
	t.Helper()
	mkdirs(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(p, testUID, testGID); err != nil {
			t.Fatal(err)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// env is one isolated user: home, instance and workspace of their own.
type env struct {
	t                   testing.TB
	dir, home, inst, ws string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
	dir, err := os.MkdirTemp(tmpRoot, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, home: filepath.Join(dir, "home"), inst: filepath.Join(dir, "instance"), ws: filepath.Join(dir, "ws")}
	mkdirs(t, dir, e.home, e.ws)
	instMu.Lock()
	instanceIDs = append(instanceIDs, instanceID(e.inst))
	instMu.Unlock()
	if r := e.hobbs(nil, "init", "--no-input"); r.code != 0 {
		t.Fatalf("hobbs init: %d %s", r.code, r.stderr)
	}
	return e
}

// hobbs runs the binary under test as the test user.
func (e *env) hobbs(stdin []byte, args ...string) result {
	e.t.Helper()
	return hobbsAs(stdin, e.home, []string{"HOBBS_HOME=" + e.inst}, args...)
}

// start starts a hobbs command in the background; the test's cleanup kills
// it (before the volume cleanup registered earlier runs).
func (e *env) start(t testing.TB, c *exec.Cmd) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = c.Process.Kill()
			}
		}
	})
}

func (e *env) command(stdin []byte, args ...string) *exec.Cmd {
	return commandAs(stdin, e.home, []string{"HOBBS_HOME=" + e.inst}, args...)
}

func commandAs(stdin []byte, home string, extra []string, args ...string) *exec.Cmd {
	c := exec.Command(hobbsBin, args...)
	c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C"}, extra...)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		c.Env = append(c.Env, "DOCKER_HOST="+h)
	}
	if os.Getuid() == 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(testUID), Gid: uint32(testGID), Groups: groups}}
	}
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	return c
}

func hobbsAs(stdin []byte, home string, extra []string, args ...string) result {
	c := commandAs(stdin, home, extra, args...)
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

// run is `hobbs run --image --base --workspace -- cmd...`.
func (e *env) runArgs(name string, cmd ...string) []string {
	a := []string{"run", "--image", image, "--base", baseImage, "--workspace", e.ws, "--name", name}
	if len(cmd) > 0 {
		a = append(append(a, "--"), cmd...)
	}
	return a
}

// sessionName is unique per run and test.
func sessionName(t testing.TB, tag string) string {
	return "e2e-" + runID + "-" + tag
}

// docker runs the docker CLI as the test process.
func docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// leftovers lists hobbs-labelled objects of the instance in dir.
func (e *env) leftovers(t testing.TB) []string {
	t.Helper()
	id := instanceID(e.inst)
	var left []string
	for _, q := range [][]string{
		{"ps", "-a", "--format", "container {{.Names}}", "--filter", "label=dev.hobbs.instance=" + id},
		{"network", "ls", "--format", "network {{.Name}}", "--filter", "label=dev.hobbs.instance=" + id},
		{"volume", "ls", "--format", "volume {{.Name}} {{.Label \"dev.hobbs.role\"}}", "--filter", "label=dev.hobbs.instance=" + id},
	} {
		for _, l := range strings.Split(docker(t, q...), "\n") {
			if l != "" && !strings.HasSuffix(l, " claude-state") {
				left = append(left, l)
			}
		}
	}
	return left
}

// removeVolume removes the instance's Claude state volume at the end of a test.
func (e *env) removeVolume(t testing.TB) {
	t.Cleanup(func() {
		_ = exec.Command("docker", "volume", "rm", "-f", "hobbs-claude-"+instanceID(e.inst)).Run()
	})
}

// instanceID mirrors launcher.InstanceID (a test there keeps them equal).
func instanceID(root string) string {
	h := sha256.Sum256([]byte(root))
	return hex.EncodeToString(h[:6])
}

// waitFor polls f until it is true or d passes.
func waitFor(t testing.TB, d time.Duration, what string, f func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !f() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", d, what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
