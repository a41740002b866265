package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"golang.org/x/sys/unix"
)

const (
	testToken  = "0123456789abcdef0123456789abcdef0123456789abcdef"
	testSecret = "ghp_SECRETVALUEthatmustnotleak1234567890"
)

func testSession(t *testing.T) *Session {
	t.Helper()
	in, _ := instance.At(t.TempDir())
	cfg, err := config.Parse("config.yaml", []byte("env:\n  GITHUB_TOKEN: vault:github\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resources.CPUs = "1.5"
	s := &Session{Engine: engine.New("docker"), Instance: in, Name: "hobbs-abc123", Secrets: []string{"GITHUB_TOKEN=" + testSecret},
		Progress: func(string, ...any) {}}
	s.token, s.owner = testToken, Owner()
	testRuns[s] = &testRun{cfg: cfg, image: "hobbs:local", workspace: t.TempDir(), uid: os.Getuid(), gid: 2345, runVolume: RunVolume("hobbs-abc123")}
	t.Cleanup(func() { delete(testRuns, s) })
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	return s
}

// testRun is what a test session's plan is made from (prepareMounts); a
// test changes it, then makes the plan again.
type testRun struct {
	cfg              *config.Config
	image, workspace string
	command          []string
	uid, gid         int
	tty              bool
	runVolume        string
	unlayered        bool // the shares bound as they are (no layers)
}

var testRuns = map[*Session]*testRun{}

// knobs is what s's plan is made from.
func knobs(s *Session) *testRun { return testRuns[s] }

// prepareMounts surveys the host for a test session and makes its plan
// (as PlanRun does; Execute is given one ready-made).
func (s *Session) prepareMounts() error {
	r := knobs(s)
	h, err := plan.Survey(s.Instance, r.cfg, s.Engine.IsPodman(), r.workspace, r.uid, r.gid, s.Progress)
	if err != nil {
		return err
	}
	h.RunVolume = r.runVolume
	if r.unlayered {
		h.Layers = ""
	}
	p, err := plan.New(r.cfg, plan.RunSpec{Kind: plan.KindSession, Name: s.Name, Image: r.image, Command: r.command, TTY: r.tty, Host: h})
	if err != nil {
		return err
	}
	s.plan = p
	return nil
}

// replan makes s's plan again after a test changed what it is made from.
func replan(t *testing.T, s *Session) {
	t.Helper()
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
}

// Attack first: no secret value may reach any argv the launcher builds.
func TestArgvHoldsNoSecret(t *testing.T) {
	s := testSession(t)
	for name, argv := range map[string][]string{"agent": s.AgentArgs(), "proxy": s.ProxyArgs()} {
		joined := strings.Join(argv, " ")
		for _, v := range []string{testToken, testSecret} {
			if strings.Contains(joined, v) {
				t.Errorf("%s argv holds a secret: %s", name, joined)
			}
		}
	}
	env := strings.Join(s.AgentEnv(), "\n")
	for _, want := range []string{"GITHUB_TOKEN=" + testSecret, "HTTP_PROXY=http://hobbs:" + testToken + "@127.0.0.1:3128",
		"https_proxy=http://hobbs:" + testToken + "@127.0.0.1:3128"} {
		if !strings.Contains(env, want) {
			t.Errorf("agent env lacks %q", want)
		}
	}
	// None of them is in the container's configuration, not even by name
	// (-e NAME would take the value from the CLI's environment).
	a := s.AgentArgs()
	for _, n := range []string{"GITHUB_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if hasPair(a, "-e", n) {
			t.Errorf("agent argv has -e %s: the engine would keep its value (docker inspect)", n)
		}
	}
}

// Attack: the secrets and the proxy token must not sit in the engine's
// container configuration (docker inspect, config.v2.json on disk). They go
// to files in a private directory on a tmpfs, each mounted read-only into
// its one container; the directory goes with the session.
func TestSecretsOnlyInSessionFiles(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := testSession(t)
	if err := s.writeSessionFiles(); err != nil {
		t.Fatal(err)
	}
	dir := s.filesDir
	if filepath.Dir(dir) != os.Getenv("XDG_RUNTIME_DIR") {
		t.Errorf("session files in %s, want under $XDG_RUNTIME_DIR", dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("session directory: %v %v", fi.Mode(), err)
	}
	env, err := ReadSessionEnv(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "GITHUB_TOKEN="+testSecret) || !slices.Contains(env, "HTTP_PROXY=http://hobbs:"+testToken+"@127.0.0.1:3128") {
		t.Errorf("session env file: %q", env)
	}
	tok, _ := os.ReadFile(filepath.Join(dir, "token"))
	if string(tok) != testToken+"\n" {
		t.Errorf("token file %q", tok)
	}
	for _, f := range []string{"env", "token"} {
		if fi, _ := os.Stat(filepath.Join(dir, f)); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", f, fi.Mode())
		}
	}
	agent, proxy := s.AgentArgs(), s.ProxyArgs()
	if !hasPair(agent, "--mount", "type=bind,source="+dir+"/env,target="+plan.SessionEnvFile+",ro") ||
		slices.ContainsFunc(agent, func(x string) bool { return strings.Contains(x, dir+"/token") }) {
		t.Errorf("agent mounts: %v", agent)
	}
	if !hasPair(proxy, "--mount", "type=bind,source="+dir+"/token,target="+plan.SessionTokenFile+",ro") ||
		!hasPair(proxy, "--auth-token-file", plan.SessionTokenFile) ||
		slices.ContainsFunc(proxy, func(x string) bool { return strings.Contains(x, dir+"/env") }) {
		t.Errorf("proxy mounts: %v", proxy)
	}
	for _, argv := range [][]string{agent, proxy} {
		for i, x := range argv {
			if x == "-e" && (strings.Contains(argv[i+1], "TOKEN") || strings.HasPrefix(strings.ToUpper(argv[i+1]), "HTTP")) {
				t.Errorf("secret variable in the container configuration: -e %s", argv[i+1])
			}
		}
	}
	s.removeSessionFiles()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("session directory left: %v", err)
	}
	// A killed launcher's directory goes at the next run; a live one's
	// stays.
	dead, live := testSessionDir(t, true), testSessionDir(t, false)
	if err := s.writeSessionFiles(); err != nil {
		t.Fatal(err)
	}
	defer s.removeSessionFiles()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead session's files left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live session's files removed: %v", err)
	}
}

// testSessionDir makes a session directory under $XDG_RUNTIME_DIR whose
// owner is this process, or a process that cannot exist (dead).
func testSessionDir(t *testing.T, dead bool) string {
	dir, err := os.MkdirTemp(os.Getenv("XDG_RUNTIME_DIR"), "hobbs-session-")
	if err != nil {
		t.Fatal(err)
	}
	owner := Owner()
	if dead {
		host, _ := os.Hostname()
		owner = host + "/999999999/1"
	}
	os.WriteFile(filepath.Join(dir, "owner"), []byte(owner+"\n"), 0o600)
	return dir
}

func hasPair(a []string, k, v string) bool {
	for i := 0; i+1 < len(a); i++ {
		if a[i] == k && a[i+1] == v {
			return true
		}
	}
	return false
}

func TestAgentIsConfined(t *testing.T) {
	s := testSession(t)
	a := s.AgentArgs()
	for _, p := range [][2]string{
		{"--cap-drop", "ALL"}, {"--security-opt", "no-new-privileges"}, {"--user", fmt.Sprintf("%d:2345", os.Getuid())},
		{"--security-opt", "seccomp=" + plan.SeccompSource},
		{"--network", "none"}, {"--pids-limit", "512"}, {"--memory", "4g"}, {"--cpus", "1.5"},
		{"-e", "HOME=/home/dev"}, {"-e", "HOBBS_HOME=/home/dev/.hobbs"}, {"-e", "NO_PROXY=localhost,127.0.0.1"},
		{"-e", "no_proxy=localhost,127.0.0.1"}, {"-w", plan.WorkspaceDir},
		{"--mount", "type=bind,source=" + s.plan.Workspace + ",target=" + plan.WorkspaceDir},
		// The written shares through the session's own layers.
		{"--mount", "type=volume,source=" + s.Name + "-layer-memory,target=" + plan.InstanceDir + "/memory,volume-nocopy,volume-driver=local," +
			"volume-opt=type=overlay,volume-opt=device=overlay,\"volume-opt=o=lowerdir=" + s.Instance.Root + "/layers/" + s.Name + "/memory/lower,upperdir=" +
			s.Instance.Root + "/layers/" + s.Name + "/memory/upper,workdir=" + s.Instance.Root + "/layers/" + s.Name + "/memory/work,userxattr\"" + layerLabels(s)},
		// Docker makes the volumes from the mounts, labelled.
		{"--mount", "type=volume,source=" + plan.ClaudeVolume(s.Instance, "") + ",target=" + plan.ClaudeDir +
			",volume-label=dev.hobbs.role=claude-state,volume-label=dev.hobbs.instance=" + plan.InstanceID(s.Instance)},
		// The proxy's socket, read-only (connecting is not writing), and
		// the relay the entry point starts to it.
		{"--mount", "type=volume,source=" + s.plan.RunVolume + ",target=/run/hobbs,ro" + runVolumeSpec(s)},
		{"-e", "HOBBS_PROXY_SOCKET=/run/hobbs/proxy.sock"}, {"-e", "HOBBS_PROXY_RELAY=127.0.0.1:3128"},
	} {
		if !hasPair(a, p[0], p[1]) {
			t.Errorf("agent argv lacks %s %s", p[0], p[1])
		}
	}
	for i, x := range a {
		if x == "--network" && a[i+1] != "none" {
			t.Errorf("agent joins network %s: it may have none (loopback only)", a[i+1])
		}
		for _, bad := range []string{"--privileged", "--cap-add", "--net", "--pid", "--ipc", "--userns", "--device", "--security-opt"} {
			if (x == bad || strings.HasPrefix(x, bad+"=")) && !(bad == "--security-opt" &&
				(a[i+1] == "no-new-privileges" || a[i+1] == "seccomp="+plan.SeccompSource)) {
				t.Errorf("agent argv has %s", x)
			}
		}
	}
	if !slices.Contains(a, "--init") || a[len(a)-1] != "claude" || a[len(a)-2] != "hobbs:local" {
		t.Errorf("default command: %v", a[len(a)-3:])
	}
	if !slices.Contains(a, "--rm") {
		t.Errorf("the agent must be removed by the engine when its command ends: %v", a)
	}
	knobs(s).command = []string{"sh", "-c", "exit 3"}
	replan(t, s)
	a = s.AgentArgs()
	if !slices.Equal(a[len(a)-4:], []string{"hobbs:local", "sh", "-c", "exit 3"}) {
		t.Errorf("command: %v", a[len(a)-4:])
	}
	if slices.Contains(a, "-t") {
		t.Errorf("TTY without a terminal")
	}
	knobs(s).tty = true
	replan(t, s)
	if !slices.Contains(s.AgentArgs(), "-t") {
		t.Errorf("no TTY on a terminal")
	}
}

func TestProxyIsConfined(t *testing.T) {
	s := testSession(t)
	a := s.ProxyArgs()
	for _, p := range [][2]string{
		{"--cap-drop", "ALL"}, {"--security-opt", "no-new-privileges"}, {"--user", fmt.Sprintf("%d:2345", os.Getuid())},
		{"--security-opt", "seccomp=" + plan.SeccompSource},
		{"--mount", "type=volume,source=" + s.plan.RunVolume + ",target=/run/hobbs" + runVolumeSpec(s)},
		{"--mount", "type=bind,source=" + s.Instance.Root + ",target=" + plan.InstanceDir + ",ro"},
		// Of the instance's logs, only the proxy's own directory is writable.
		{"--mount", "type=bind,source=" + s.Instance.EgressLogs() + ",target=" + plan.InstanceDir + "/logs/egress"},
		{"--auth-token-file", plan.SessionTokenFile}, {"--audit", "/home/dev/.hobbs/logs/egress/audit.log"},
		{"--listen", "unix:/run/hobbs/proxy.sock"},
	} {
		if !hasPair(a, p[0], p[1]) {
			t.Errorf("proxy argv lacks %s %s", p[0], p[1])
		}
	}
	if hasPair(a, "--mount", "type=bind,source="+s.Instance.Logs()+",target="+plan.InstanceDir+"/logs") {
		t.Errorf("the proxy may write all of the instance's logs: %v", a)
	}
	// The vault, once there is one, is hidden from the proxy too.
	vault := [2]string{"--tmpfs", plan.InstanceDir + "/vault:ro,size=16k,mode=0555"}
	if hasPair(a, vault[0], vault[1]) {
		t.Errorf("a vault that does not exist covered: %v", a)
	}
	os.Mkdir(s.Instance.Vault(), 0o700)
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	if !hasPair(s.ProxyArgs(), vault[0], vault[1]) {
		t.Errorf("proxy argv lacks %s %s", vault[0], vault[1])
	}
	// Policies in order: image defaults, then the instance's.
	i := slices.Index(a, plan.PolicyFile)
	if i < 1 || a[i-1] != "--policy" || a[i+1] != "--policy" || a[i+2] != plan.InstanceDir+"/policy.yaml" {
		t.Errorf("policy order: %v", a)
	}
	if a[0] != "create" {
		t.Errorf("the proxy must be created, then started: %v", a[0])
	}
	// As process 1 without an init, a SIGTERM that comes before the Go
	// runtime's handlers are in place is dropped: a stop while the proxy
	// starts would wait for docker stop's timeout.
	if !slices.Contains(a, "--init") {
		t.Errorf("the proxy needs an init process: %v", a)
	}
	// The engine's default network, by default: no flag.
	if n := strings.Count(strings.Join(a, " "), "--network"); n != 0 {
		t.Errorf("the proxy names %d networks, want the engine's default: %v", n, a)
	}
}

// The proxy joins exactly one network, the configured one, and only a
// session network is created (and so removed) by the session.
func TestEgressNetworkModes(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{config.EgressDefault, ""},
		{config.EgressSession, "hobbs-abc123-egress"},
		{"corp-net", "corp-net"},
	} {
		s := testSession(t)
		knobs(s).cfg.EgressNet = c.mode
		replan(t, s)
		a := strings.Join(s.ProxyArgs(), " ")
		n := strings.Count(a, "--network")
		if c.want == "" && n != 0 || c.want != "" && (n != 1 || !strings.Contains(a, "--network "+c.want+" ")) {
			t.Errorf("%s: proxy argv %s", c.mode, a)
		}
		if strings.Contains(strings.Join(s.AgentArgs(), " "), c.want+" ") && c.want != "" {
			t.Errorf("%s: the agent joins %s", c.mode, c.want)
		}
		e, calls := scriptEngine(t, "exit 0") // FAKE engine: every call succeeds
		s.Engine = e
		if err := createNow(s); err != nil {
			t.Fatalf("%s: create: %v", c.mode, err)
		}
		created := countLine(calls(), "network create "+strings.Join(s.labelFlags(plan.RoleNetwork), " ")+" hobbs-abc123-egress")
		if wantN := map[bool]int{true: 1, false: 0}[c.mode == config.EgressSession]; created != wantN || s.has("egress") != (wantN == 1) {
			t.Errorf("%s: network created %d times (made: %v): %v", c.mode, created, s.has("egress"), calls())
		}
	}
}

// The containers are created while Prepare checks the image; when Prepare
// builds or pulls it, or the image was missing, they are removed (by id)
// and made again from the new one. Without a change there is one create
// each; a name clash is not retried.
func TestCreateWhilePreparing(t *testing.T) {
	for _, c := range []struct {
		name           string
		changed        bool
		failFirst      string // "image": the first creates fail as for a missing image; "clash": a name in use
		creates, rmIDs int
		wantErr        bool
	}{
		{"image current", false, "", 2, 0, false},
		{"image built", true, "", 4, 2, false},
		{"image was missing", true, "image", 4, 0, false},
		{"name clash", false, "clash", 4, 0, true}, // createContainer asks again once after leftovers are removed
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testSession(t)
			dir := t.TempDir()
			prepared := filepath.Join(dir, "prepared")
			fail := ""
			switch c.failFirst {
			case "image":
				fail = `[ -e ` + prepared + ` ] || { echo "Error: No such image: hobbs:local" >&2; exit 1; }`
			case "clash":
				fail = `echo "Error: Conflict. The container name is already in use" >&2; exit 1`
			}
			// FAKE engine: creates answer an id (or fail as asked), and
			// leave a line in created when they end.
			created := filepath.Join(dir, "created")
			e, calls := scriptEngine(t, `case "$1" in
create) trap 'echo >> `+created+`' EXIT
	`+fail+`
	echo "id$$";;
esac
exit 0
`)
			s.Engine = e
			s.Prepare = func(context.Context) (bool, error) {
				// Prepare ends after the first two creates, as a pull does:
				// it waits for them (a bound only as a safety net), not for
				// a pause the creates could overrun on a busy machine.
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if b, _ := os.ReadFile(created); strings.Count(string(b), "\n") >= 2 {
						break
					}
				}
				return c.changed, os.WriteFile(prepared, nil, 0o644)
			}
			err := createNow(s)
			if (err != nil) != c.wantErr {
				t.Fatalf("create: %v", err)
			}
			creates, rms := 0, 0
			for _, l := range calls() {
				f := strings.Fields(l)
				switch {
				case len(f) > 2 && f[0] == "create" && f[1] == "--pull" && f[2] == "never":
					creates++
				case len(f) > 2 && f[0] == "rm" && f[1] == "-f":
					for _, id := range f[2:] {
						if !strings.HasPrefix(id, "id") {
							t.Errorf("removed %s, not by id", id)
						}
						rms++
					}
				case len(f) > 0 && f[0] == "create":
					t.Errorf("a create that may pull: %s", l)
				}
			}
			if creates != c.creates || rms != c.rmIDs {
				t.Errorf("%d creates, %d removed, want %d and %d: %q", creates, rms, c.creates, c.rmIDs, calls())
			}
			if !c.wantErr && (s.agentID == "" || s.proxyID == "") {
				t.Errorf("ids %q %q", s.agentID, s.proxyID)
			}
		})
	}
}

// createNow runs s.create as a run with no leftovers to remove does.
func createNow(s *Session) error {
	reaped := make(chan struct{})
	close(reaped)
	return s.create(context.Background(), reaped)
}

// asPodman is the FAKE engine e under podman's name (the launcher tells the
// engines apart by the binary's name).
func asPodman(t *testing.T, e engine.CLI) engine.CLI {
	t.Helper()
	podman := filepath.Join(filepath.Dir(e.Bin), "podman")
	if err := os.Rename(e.Bin, podman); err != nil {
		t.Fatal(err)
	}
	e.Bin = podman
	return e
}

// runVolumeSpec is what a Docker mount of the socket volume adds: the
// options and labels the engine creates it with.
func runVolumeSpec(s *Session) string {
	return `,volume-driver=local,volume-opt=type=tmpfs,volume-opt=device=tmpfs,"volume-opt=o=size=64k,mode=1777"` +
		",volume-label=dev.hobbs.session=hobbs-abc123,volume-label=dev.hobbs.role=run" +
		",volume-label=dev.hobbs.instance=" + plan.InstanceID(s.Instance) + ",volume-label=dev.hobbs.owner=" + s.owner
}

// Podman's --mount creates no labelled volumes: the session creates them
// itself, before the containers, and mounts them plainly. Docker needs no
// such calls.
func TestVolumesPerEngine(t *testing.T) {
	for _, bin := range []string{"docker", "podman"} {
		s := testSession(t)
		e, calls := scriptEngine(t, "exit 0") // FAKE engine: every call succeeds
		if bin == "podman" {
			e = asPodman(t, e)
		}
		s.Engine = e
		replan(t, s)
		if err := createNow(s); err != nil {
			t.Fatalf("%s: create: %v", bin, err)
		}
		var creates []string
		for _, c := range calls() {
			if strings.HasPrefix(c, "volume create") {
				creates = append(creates, c)
			}
		}
		agent := strings.Join(s.AgentArgs(), " ")
		if bin == "docker" {
			if len(creates) != 0 {
				t.Errorf("docker: volume creates %v", creates)
			}
			if !s.has("run") {
				t.Errorf("docker: the socket volume is not counted as made (cleanup would leave it)")
			}
			continue
		}
		if len(creates) != 2 || !strings.Contains(strings.Join(creates, "\n"), "--opt o=mode=1777") {
			t.Errorf("podman: volume creates %v", creates)
		}
		if strings.Contains(agent, "volume-label") || strings.Contains(agent, "volume-opt") {
			t.Errorf("podman: mount options it does not take: %s", agent)
		}
	}
}

// Podman's `volume create` of a name that exists fails (Docker's succeeds):
// the Claude state volume exists from the second session on, which must
// still start.
func TestPodmanStateVolumeExists(t *testing.T) {
	s := testSession(t)
	// FAKE podman: the state volume exists already.
	e, calls := scriptEngine(t, `case "$*" in
"volume create "*hobbs-claude-*) echo "Error: volume with name hobbs-claude-x already exists: volume already exists" >&2; exit 125;;
esac
exit 0
`)
	s.Engine = asPodman(t, e)
	replan(t, s)
	if err := createNow(s); err != nil {
		t.Fatalf("create with an existing state volume: %v (calls %q)", err, calls())
	}
}

func TestPodmanKeepsUserNamespace(t *testing.T) {
	s := testSession(t)
	s.Engine = engine.New("/usr/bin/podman")
	replan(t, s)
	if !hasPair(s.AgentArgs(), "--userns", "keep-id") || !hasPair(s.ProxyArgs(), "--userns", "keep-id") {
		t.Errorf("podman needs --userns keep-id for host-owned files")
	}
	if hasPair(testSession(t).AgentArgs(), "--userns", "keep-id") {
		t.Errorf("docker must not get --userns keep-id")
	}
}

// A vault mapping must not be able to redirect the agent's traffic or home.
func TestCheckSecretNames(t *testing.T) {
	for _, n := range []string{"HTTP_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "HOME", "PATH",
		"HOBBS_HOME", "HOBBS_CONTEXT", "CLAUDE_CONFIG_DIR"} {
		err := plan.CheckSecretNames([]string{n + "=x"})
		if errs.Code(err) != errs.Usage {
			t.Errorf("%s: %v, want a usage error", n, err)
		}
	}
	if err := plan.CheckSecretNames([]string{"GITHUB_TOKEN=x", "ANTHROPIC_API_KEY=y"}); err != nil {
		t.Errorf("ordinary names refused: %v", err)
	}
	if err := plan.CheckSecretNames([]string{"=x"}); err == nil {
		t.Errorf("empty name accepted")
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"hobbs-abc123", "work", "a", "x.y_z-1", strings.Repeat("a", 40)} {
		if err := plan.ValidName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-rf", "../x", "a/b", "A", "a b", "x-proxy", strings.Repeat("a", 41),
		"--network=host", "a\nb", ".x", "_x"} {
		if err := plan.ValidName(bad); errs.Code(err) != errs.Usage {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := plan.ValidName(NewName()); err != nil {
		t.Errorf("NewName: %v", err)
	}
}

func TestInstanceID(t *testing.T) {
	in, _ := instance.At("/home/u/.local/share/hobbs")
	h := sha256.Sum256([]byte(in.Root))
	if got := plan.InstanceID(in); got != hex.EncodeToString(h[:6]) { // tests/e2e mirrors this
		t.Errorf("plan.InstanceID = %s", got)
	}
	if plan.ClaudeVolume(in, "") != "hobbs-claude-"+plan.InstanceID(in) || plan.ClaudeVolume(in, "mine") != "mine" {
		t.Errorf("plan.ClaudeVolume")
	}
}

func TestOwnerAlive(t *testing.T) {
	if !OwnerAlive(Owner()) {
		t.Errorf("own process reported dead")
	}
	host, _ := os.Hostname()
	for _, o := range []string{"", "garbage", host + "/0/1", host + "/x/1", host + "/999999999/1"} {
		if OwnerAlive(o) {
			t.Errorf("%q reported alive", o)
		}
	}
	// Same pid, another start time: pid reuse, the owner is gone.
	if st := startTime(os.Getpid()); st != "" && OwnerAlive(strings.TrimSuffix(Owner(), st)+"1") {
		t.Errorf("pid reuse not detected")
	}
	if !OwnerAlive("some-other-host/1/1") {
		t.Errorf("another host's owner must be assumed alive")
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"20.10.24+dfsg1", "20.10", false}, {"19.03.1", "20.10", true}, {"24.0.7", "20.10", false},
		{"20.9", "20.10", true}, {"3.4.4", "4.0", true}, {"4.9.3", "4.0", false}} {
		if versionLess(c.a, c.b) != c.less {
			t.Errorf("versionLess(%s, %s) != %v", c.a, c.b, c.less)
		}
	}
}

// Attack: the agent edits the files that steer the host or reaches what it
// must never see. The instance root is never mounted: the agent gets only
// instance.AgentShares, the files among them read-only, so policy.yaml,
// config.yaml, foundation.md and claude.md cannot be changed, and the
// vault, .git, .gitignore, .locks, logs/audit.log and logs/egress are not
// in its container at all.
func TestAgentGetsOnlyTheShares(t *testing.T) {
	s := testSession(t)
	in := s.Instance
	for _, f := range []string{"config.yaml", "policy.yaml", "foundation.md", "claude.md"} {
		os.WriteFile(filepath.Join(in.Root, f), nil, 0o644)
	}
	for _, d := range []string{".git", "vault/keys", ".locks"} {
		os.MkdirAll(filepath.Join(in.Root, d), 0o700)
	}
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	a := s.AgentArgs()
	var sources []string
	for i, x := range a {
		if x != "--mount" || !strings.HasPrefix(a[i+1], "type=bind,") {
			continue
		}
		f := a[i+1]
		if strings.Contains(f, "target="+plan.SessionDir+"/") {
			continue // a session file
		}
		src := strings.TrimPrefix(strings.Split(f, ",")[1], "source=")
		sources = append(sources, src)
		rel, err := filepath.Rel(in.Root, src)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // the workspace
		}
		share := slices.IndexFunc(instance.AgentShares(), func(sh instance.Share) bool { return sh.Rel == filepath.ToSlash(rel) })
		if share < 0 {
			t.Errorf("agent mounts %s, which is not a share", rel)
			continue
		}
		if ro := strings.HasSuffix(f, ",ro"); ro != instance.AgentShares()[share].ReadOnly {
			t.Errorf("%s: readonly=%v, want %v", rel, ro, !ro)
		}
	}
	if len(sources)+len(s.plan.Layers) != 1+len(instance.AgentShares()) {
		t.Errorf("agent bind mounts %v, want the workspace and every share", sources)
	}
	if slices.Contains(sources, in.Root) {
		t.Errorf("the instance root is mounted")
	}
}

// Attack: the agent of an earlier session replaced a share by a link to a
// host path (the engine, as root, would mount the path the link names:
// ~/.ssh, a directory under /root, a UNIX socket), or by a FIFO, or left
// one the user does not own. The run refuses before anything is created,
// naming the path.
func TestBindSourcesAreChecked(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("secret"), 0o600)
	for _, c := range []struct {
		name  string
		plant func(in instance.Instance) string // returns the path the error must name
	}{
		{"link as share", func(in instance.Instance) string {
			os.RemoveAll(in.MemoryDir())
			os.Symlink(outside, in.MemoryDir())
			return in.MemoryDir()
		}},
		{"link as parent of share", func(in instance.Instance) string {
			os.Rename(in.Logs(), in.Logs()+".aside")
			os.Symlink(outside, in.Logs())
			return in.Logs()
		}},
		{"link as file share", func(in instance.Instance) string {
			os.Remove(in.Policy())
			os.Symlink(filepath.Join(outside, "id_rsa"), in.Policy())
			return in.Policy()
		}},
		{"link as egress log dir", func(in instance.Instance) string {
			os.RemoveAll(in.EgressLogs())
			os.Symlink(outside, in.EgressLogs())
			return in.EgressLogs()
		}},
		{"link as vault", func(in instance.Instance) string {
			os.Symlink(outside, in.Vault())
			return in.Vault()
		}},
		{"hard link as file share", func(in instance.Instance) string {
			os.MkdirAll(in.MemoryDir(), 0o755)
			os.Link(in.Policy(), filepath.Join(in.MemoryDir(), "policy-alias.md"))
			return in.Policy()
		}},
		{"fifo as file share", func(in instance.Instance) string {
			os.Remove(in.Foundation())
			if err := unix.Mkfifo(in.Foundation(), 0o644); err != nil {
				t.Fatal(err)
			}
			return in.Foundation()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testSession(t)
			os.WriteFile(s.Instance.Policy(), nil, 0o644)
			os.WriteFile(s.Instance.Foundation(), nil, 0o644)
			bad := c.plant(s.Instance)
			done := make(chan error, 1)
			go func() { done <- s.prepareMounts() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("prepareMounts blocked")
			}
			if err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("err = %v, want a refusal naming %s", err, bad)
			}
			if a := errs.AdviceOf(err); a.Kind != plan.UnsafeSource {
				t.Errorf("advice %+v", a)
			}
		})
	}
	t.Run("not owned", func(t *testing.T) {
		s := testSession(t)
		knobs(s).uid = os.Getuid() + 1
		if err := s.prepareMounts(); err == nil || !strings.Contains(err.Error(), "owned by uid") {
			t.Fatalf("err = %v", err)
		}
	})
}

// Attack: the workspace is a git repository; the agent writes a
// core.fsmonitor command into .git/config, a hook into .git/hooks, or a
// .git/commondir that sends git to a config of its own — all run by git on
// the host. .git is mounted read-only, as a mount point of its own (the agent
// cannot rename it and put its own in its place). workspace_git_readonly:
// false turns that off.
func TestWorkspaceGitIsCovered(t *testing.T) {
	s := testSession(t)
	os.MkdirAll(filepath.Join(knobs(s).workspace, ".git"), 0o755)
	os.WriteFile(filepath.Join(knobs(s).workspace, ".git", "config"), nil, 0o644)
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	a := s.AgentArgs()
	ws := s.plan.Workspace
	m := "type=bind,source=" + ws + "/.git,target=" + plan.WorkspaceDir + "/.git,ro"
	i := slices.Index(a, m)
	if i < 0 {
		t.Errorf("agent argv lacks --mount %s", m)
	}
	if j := slices.Index(a, "type=bind,source="+ws+",target="+plan.WorkspaceDir); i < j {
		t.Errorf("%s mounted before the workspace", m)
	}
	off := false
	knobs(s).cfg.WorkspaceGitReadOnly = &off
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(s.AgentArgs(), " "), ".git") {
		t.Errorf("workspace_git_readonly: false still covers .git")
	}
	// A .git that is a link is not followed (git on the host would follow
	// it; the session warns).
	on := true
	knobs(s).cfg.WorkspaceGitReadOnly = &on
	os.RemoveAll(filepath.Join(ws, ".git"))
	os.Symlink(t.TempDir(), filepath.Join(ws, ".git"))
	var warned string
	s.Progress = func(f string, a ...any) { warned = fmt.Sprintf(f, a...) }
	if err := s.prepareMounts(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(s.AgentArgs(), " "), ".git") || !strings.Contains(warned, "not protected") {
		t.Errorf("linked .git: mounts %v, warning %q", s.AgentArgs(), warned)
	}
}

// Attack: a workspace that holds the instance (hobbs run --workspace ~) or
// lies in it would mount the vault and every host-only file into the
// agent's container.
func TestWorkspaceAndInstanceDoNotOverlap(t *testing.T) {
	for _, c := range []struct {
		name string
		ws   func(s *Session) string
	}{
		{"holds the instance", func(s *Session) string { return filepath.Dir(s.Instance.Root) }},
		{"is the instance", func(s *Session) string { return s.Instance.Root }},
		{"inside the instance", func(s *Session) string { return s.Instance.Data() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testSession(t)
			knobs(s).workspace = c.ws(s)
			os.MkdirAll(knobs(s).workspace, 0o755)
			if err := s.prepareMounts(); err == nil || !strings.Contains(err.Error(), "overlap") {
				t.Fatalf("err = %v, want a refusal", err)
			}
		})
	}
}

// Attack: an agent writes its whole workspace, so it can replace a path
// below it that another session is about to mount, or swap that
// workspace's .git for a link when its own session does not hold .git as a
// mount point. A launcher refuses a workspace inside or around a live
// session's, and one shared with a session whose .git is writable.
func TestWorkspaceClaims(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	a := &Session{Name: "a", owner: Owner()}
	releaseA, err := a.claimWorkspace(dir, ws, false)
	if err != nil {
		t.Fatal(err)
	}
	b := &Session{Name: "b", owner: Owner()}
	if _, err := b.claimWorkspace(dir, filepath.Join(ws, "sub"), false); err == nil || !strings.Contains(err.Error(), "inside one another") {
		t.Errorf("nested workspace: %v", err)
	}
	if _, err := b.claimWorkspace(dir, filepath.Dir(ws), false); err == nil || !strings.Contains(err.Error(), "inside one another") {
		t.Errorf("enclosing workspace: %v", err)
	}
	if _, err := b.claimWorkspace(dir, ws, true); err == nil || !strings.Contains(err.Error(), "with its .git writable") {
		t.Errorf("shared workspace, .git uncovered in a: %v", err)
	}
	// Sharing is fine when neither mounts .git or the other covers it.
	releaseB, err := b.claimWorkspace(dir, ws, false)
	if err != nil {
		t.Fatalf("shared workspace, nothing to race: %v", err)
	}
	releaseB()
	releaseA()
	// A note of a launcher that is gone counts for nothing and is removed.
	host, _ := os.Hostname()
	dead, _ := json.Marshal(wsClaim{Session: "dead", Workspace: ws, Owner: host + "/999999999/1"})
	os.WriteFile(filepath.Join(dir, "dead.json"), dead, 0o600)
	release, err := b.claimWorkspace(dir, filepath.Join(ws, "sub"), true)
	if err != nil {
		t.Fatalf("a dead session's note refused the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dead.json")); !os.IsNotExist(err) {
		t.Errorf("dead note left: %v", err)
	}
	release()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 { // the lock file
		t.Errorf("notes left: %v", ents)
	}
}

// TestAWSSigV4SessionFiles: an aws-sigv4 binding gives the agent the
// placeholders of both keys and the proxy both values, as the two kinds of
// secret its re-signing needs; neither value is in the agent's variables.
func TestAWSSigV4SessionFiles(t *testing.T) {
	const id, secret = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	gotID, gotSecret, ok := awsKeyPair("  " + id + "\r\n\n" + secret + "\n")
	if !ok || gotID != id || gotSecret != secret {
		t.Fatalf("awsKeyPair: %q %q %v", gotID, gotSecret, ok)
	}
	for _, bad := range []string{id, id + "\n" + secret + "\nthird", id + " " + secret, ""} {
		if _, _, ok := awsKeyPair(bad); ok {
			t.Errorf("awsKeyPair(%q) accepted", bad)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := testSession(t)
	knobs(s).cfg.Secrets = map[string]policy.Binding{policy.AWSKeyIDVar: {Vault: "aws", Kind: policy.KindAWSSigV4, Hosts: []string{"*.amazonaws.com"}}}
	replan(t, s)
	bound, err := proxySecrets(policy.Binding{Name: policy.AWSKeyIDVar, Vault: "aws", Kind: policy.KindAWSSigV4, Hosts: []string{"*.amazonaws.com"}},
		id+"\n"+secret+"\n")
	if err != nil {
		t.Fatal(err)
	}
	s.Bound = bound
	if err := s.writeSessionFiles(); err != nil {
		t.Fatal(err)
	}
	defer s.removeSessionFiles()
	ss, err := policy.LoadSessionSecrets(filepath.Join(s.filesDir, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Secrets) != 2 || ss.Secrets[0].Part != policy.PartAWSKeyID || ss.Secrets[0].Value != id ||
		ss.Secrets[1].Part != policy.PartAWSSecretKey || ss.Secrets[1].Value != secret || ss.Secrets[1].Name != policy.AWSSecretKeyVar {
		t.Fatalf("proxy secrets: %+v", ss.Secrets)
	}
	env := strings.Join(s.AgentEnv(), "\n")
	for _, want := range []string{policy.AWSKeyIDVar + "=" + ss.Secrets[0].Placeholder, policy.AWSSecretKeyVar + "=" + ss.Secrets[1].Placeholder} {
		if !strings.Contains(env, want) {
			t.Errorf("agent env lacks %q", want)
		}
	}
	if strings.Contains(env, id) || strings.Contains(env, secret) {
		t.Error("a key's value is in the agent's variables")
	}
}

func layerLabels(s *Session) string {
	return ",volume-label=dev.hobbs.session=" + s.Name + ",volume-label=dev.hobbs.role=layer" +
		",volume-label=dev.hobbs.instance=" + plan.InstanceID(s.Instance) + ",volume-label=dev.hobbs.owner=" + s.owner
}
