package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

const (
	testToken  = "0123456789abcdef0123456789abcdef0123456789abcdef"
	testSecret = "ghp_SECRETVALUEthatmustnotleak1234567890"
)

func testSession(t *testing.T) *Session {
	t.Helper()
	in, _ := instance.At(t.TempDir())
	cfg := config.Default()
	cfg.Resources.CPUs = "1.5"
	s := &Session{Engine: engine.New("docker"), Instance: in, Config: cfg, Name: "hobbs-abc123", Image: "hobbs:local",
		Workspace: "/home/u/ws", UID: 1234, GID: 2345, Secrets: []string{"GITHUB_TOKEN=" + testSecret}}
	s.token, s.owner, s.runVolume = testToken, Owner(), RunVolume("hobbs-abc123")
	return s
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
	// Each value travels as -e NAME (name only).
	a := s.AgentArgs()
	for _, n := range []string{"GITHUB_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if !hasPair(a, "-e", n) {
			t.Errorf("agent argv lacks -e %s: %v", n, a)
		}
	}
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
		{"--cap-drop", "ALL"}, {"--security-opt", "no-new-privileges"}, {"--user", "1234:2345"},
		{"--network", "none"}, {"--pids-limit", "512"}, {"--memory", "4g"}, {"--cpus", "1.5"},
		{"-e", "HOME=/home/dev"}, {"-e", "HOBBS_HOME=/home/dev/.hobbs"}, {"-e", "NO_PROXY=localhost,127.0.0.1"},
		{"-e", "no_proxy=localhost,127.0.0.1"}, {"-w", WorkspaceDir},
		{"--tmpfs", InstanceDir + "/vault/keys:ro,size=16k,mode=0555"},
		{"--mount", "type=bind,source=/home/u/ws,target=" + WorkspaceDir},
		{"--mount", "type=bind,source=" + s.Instance.Root + ",target=" + InstanceDir},
		// Docker makes the volumes from the mounts, labelled.
		{"--mount", "type=volume,source=" + ClaudeVolume(s.Instance, "") + ",target=" + ClaudeDir +
			",volume-label=dev.hobbs.role=claude-state,volume-label=dev.hobbs.instance=" + InstanceID(s.Instance)},
		// The proxy's socket, read-only (connecting is not writing), and
		// the relay the entry point starts to it.
		{"--mount", "type=volume,source=" + s.runVolume + ",target=/run/hobbs,readonly" + runVolumeSpec(s)},
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
			if (x == bad || strings.HasPrefix(x, bad+"=")) && !(bad == "--security-opt" && a[i+1] == "no-new-privileges") {
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
	s.Command = []string{"sh", "-c", "exit 3"}
	a = s.AgentArgs()
	if !slices.Equal(a[len(a)-4:], []string{"hobbs:local", "sh", "-c", "exit 3"}) {
		t.Errorf("command: %v", a[len(a)-4:])
	}
	if slices.Contains(a, "-t") {
		t.Errorf("TTY without a terminal")
	}
	s.TTY = true
	if !slices.Contains(s.AgentArgs(), "-t") {
		t.Errorf("no TTY on a terminal")
	}
}

func TestProxyIsConfined(t *testing.T) {
	s := testSession(t)
	a := s.ProxyArgs()
	for _, p := range [][2]string{
		{"--cap-drop", "ALL"}, {"--security-opt", "no-new-privileges"}, {"--user", "1234:2345"},
		{"--mount", "type=volume,source=" + s.runVolume + ",target=/run/hobbs" + runVolumeSpec(s)},
		{"--mount", "type=bind,source=" + s.Instance.Root + ",target=" + InstanceDir + ",readonly"},
		// Of the instance's logs, only the proxy's own directory is writable.
		{"--mount", "type=bind,source=" + s.Instance.EgressLogs() + ",target=" + InstanceDir + "/logs/egress"},
		{"--tmpfs", InstanceDir + "/vault:ro,size=16k,mode=0555"},
		{"--auth-token-env", TokenEnv}, {"-e", TokenEnv}, {"--audit", "/home/dev/.hobbs/logs/egress/audit.log"},
		{"--listen", "unix:/run/hobbs/proxy.sock"},
	} {
		if !hasPair(a, p[0], p[1]) {
			t.Errorf("proxy argv lacks %s %s", p[0], p[1])
		}
	}
	if hasPair(a, "--mount", "type=bind,source="+s.Instance.Logs()+",target="+InstanceDir+"/logs") {
		t.Errorf("the proxy may write all of the instance's logs: %v", a)
	}
	// Policies in order: image defaults, then the instance's.
	i := slices.Index(a, PolicyFile)
	if i < 1 || a[i-1] != "--policy" || a[i+1] != "--policy" || a[i+2] != InstanceDir+"/policy.yaml" {
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
		s.Config.EgressNet = c.mode
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
		created := countLine(calls(), "network create "+strings.Join(s.labels(RoleNetwork), " ")+" hobbs-abc123-egress")
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
			// FAKE engine: creates answer an id (or fail as asked).
			e, calls := scriptEngine(t, `case "$1" in
create) `+fail+`
	echo "id$$";;
esac
exit 0
`)
			s.Engine = e
			s.Prepare = func(context.Context) (bool, error) {
				time.Sleep(100 * time.Millisecond) // the creates start meanwhile
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
		",volume-label=dev.hobbs.instance=" + InstanceID(s.Instance) + ",volume-label=dev.hobbs.owner=" + s.owner
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
		if len(creates) != 2 || !strings.Contains(strings.Join(creates, "\n"), "--opt o=size=64k,mode=1777") {
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
	if err := createNow(s); err != nil {
		t.Fatalf("create with an existing state volume: %v (calls %q)", err, calls())
	}
}

func TestPodmanKeepsUserNamespace(t *testing.T) {
	s := testSession(t)
	s.Engine = engine.New("/usr/bin/podman")
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
		err := CheckSecretNames([]string{n + "=x"})
		if errs.Code(err) != errs.Usage {
			t.Errorf("%s: %v, want a usage error", n, err)
		}
	}
	if err := CheckSecretNames([]string{"GITHUB_TOKEN=x", "ANTHROPIC_API_KEY=y"}); err != nil {
		t.Errorf("ordinary names refused: %v", err)
	}
	if err := CheckSecretNames([]string{"=x"}); err == nil {
		t.Errorf("empty name accepted")
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"hobbs-abc123", "work", "a", "x.y_z-1", strings.Repeat("a", 40)} {
		if err := ValidName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-rf", "../x", "a/b", "A", "a b", "x-proxy", strings.Repeat("a", 41),
		"--network=host", "a\nb", ".x", "_x"} {
		if err := ValidName(bad); errs.Code(err) != errs.Usage {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidName(NewName()); err != nil {
		t.Errorf("NewName: %v", err)
	}
}

func TestIsRegistryRef(t *testing.T) {
	for ref, want := range map[string]bool{"": false, "hobbs:local": false, "hobbs-e2e-1:test": false, "user/hobbs:1": false,
		"ghcr.io/hobbs-agent/hobbs:1": true, "localhost:5000/hobbs": true, "localhost/hobbs": true, "registry:5000/x": true} {
		if got := IsRegistryRef(ref); got != want {
			t.Errorf("IsRegistryRef(%q) = %v", ref, got)
		}
	}
}

func TestInstanceID(t *testing.T) {
	in, _ := instance.At("/home/u/.local/share/hobbs")
	h := sha256.Sum256([]byte(in.Root))
	if got := InstanceID(in); got != hex.EncodeToString(h[:6]) { // tests/e2e mirrors this
		t.Errorf("InstanceID = %s", got)
	}
	if ClaudeVolume(in, "") != "hobbs-claude-"+InstanceID(in) || ClaudeVolume(in, "mine") != "mine" {
		t.Errorf("ClaudeVolume")
	}
}

func TestProxyTokenOnlyInEnv(t *testing.T) {
	s := testSession(t)
	if strings.Contains(strings.Join(s.ProxyArgs(), " "), testToken) {
		t.Errorf("token in the proxy's argv")
	}
	if env := s.ProxyEnv(); !slices.Equal(env, []string{TokenEnv + "=" + testToken}) {
		t.Errorf("ProxyEnv = %q", env)
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

// hashInputs is the inputs hash as Ensure computes it.
func hashInputs(assets fs.FS, bin, base, baseID string) (*inputs, error) {
	local, err := localDigest(assets, bin)
	if err != nil {
		return nil, err
	}
	return &inputs{hash: inputsHash(local, base, baseID)}, nil
}

func TestHashInputs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hobbs")
	os.WriteFile(bin, []byte("binary-1"), 0o755)
	assets := fstest.MapFS{"dist/Dockerfile": {Data: []byte("FROM x")}, "src/agents/hobbs/CLAUDE.md": {Data: []byte("id")}}
	h := func() string {
		in, err := hashInputs(assets, bin, "base:1", "sha256:aa")
		if err != nil {
			t.Fatal(err)
		}
		return in.hash
	}
	h0 := h()
	if h() != h0 {
		t.Fatalf("hash not stable")
	}
	assets["src/agents/hobbs/CLAUDE.md"] = &fstest.MapFile{Data: []byte("id2")}
	h1 := h()
	os.WriteFile(bin, []byte("binary-2"), 0o755)
	h2 := h()
	in, _ := hashInputs(assets, bin, "base:1", "sha256:bb")
	in2, _ := hashInputs(assets, bin, "base:2", "sha256:bb")
	if h1 == h0 || h2 == h1 || in.hash == h2 || in2.hash == in.hash {
		t.Errorf("hash did not change with its inputs: %s %s %s %s %s", h0, h1, h2, in.hash, in2.hash)
	}
	// The context has the assets at their paths and the binary as ./hobbs.
	ctx := t.TempDir()
	if err := writeContext(ctx, assets, bin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"dist/Dockerfile", "src/agents/hobbs/CLAUDE.md", "hobbs"} {
		if _, err := os.Stat(filepath.Join(ctx, p)); err != nil {
			t.Errorf("context lacks %s", p)
		}
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "x")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if _, err := FindBinary(notELF, "amd64"); errs.Code(err) != errs.Usage {
		t.Errorf("non-ELF accepted: %v", err)
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		if err := checkBinary("/bin/sh", "amd64"); err == nil || !strings.Contains(err.Error(), "dynamically linked") && !strings.Contains(err.Error(), "built for") {
			t.Errorf("/bin/sh accepted: %v", err)
		}
	}
	_, err := FindBinary("", "no-such-arch")
	if errs.Code(err) != errs.Missing || !strings.Contains(errs.Hint(err), "make build") {
		t.Errorf("no binary: %v (hint %q)", err, errs.Hint(err))
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

// Attack: the agent edits the files that steer the host. policy.yaml is
// hot-reloaded by the proxy (the agent would allow itself any destination),
// config.yaml maps vault entries into the next session's environment (the
// agent would hand itself every secret), .git/hooks run on the host, and
// logs/egress holds the proxy's record of where the agent connected (it
// would erase its traces). All are mounted read-only over the writable
// instance.
func TestAgentCannotRewriteHostControls(t *testing.T) {
	s := testSession(t)
	for _, p := range []string{"config.yaml", "policy.yaml", ".git", "logs/egress"} {
		ro := "type=bind,source=" + filepath.Join(s.Instance.Root, p) + ",target=" + InstanceDir + "/" + p + ",readonly"
		if hasPair(s.AgentArgs(), "--mount", ro) {
			t.Errorf("%s mounted read-only although it does not exist", p)
		}
		if p == ".git" || p == "logs/egress" {
			os.MkdirAll(filepath.Join(s.Instance.Root, p), 0o755)
		} else {
			os.WriteFile(filepath.Join(s.Instance.Root, p), nil, 0o644)
		}
		a := s.AgentArgs()
		if !hasPair(a, "--mount", ro) {
			t.Errorf("agent argv lacks the read-only mount of %s", p)
		}
		// The read-only mount must come after the writable instance mount,
		// or the engine would cover it.
		rw := slices.Index(a, "type=bind,source="+s.Instance.Root+",target="+InstanceDir)
		if i := slices.Index(a, ro); i < rw {
			t.Errorf("%s mounted before the instance (%d < %d)", p, i, rw)
		}
	}
}
