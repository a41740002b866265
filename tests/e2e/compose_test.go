package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// TestCompose checks dist/docker-compose.yml: it validates, and brought up it
// gives the agent the proxy as its only way out.
func TestCompose(t *testing.T) {
	e := newEnv(t)
	bin, pre := composeCommand(t)
	project := "hobbse2e" + runID
	file := filepath.Join(repoRoot, "dist", "docker-compose.yml")
	compose := func(args ...string) (string, error) {
		c := exec.Command(bin, append(append(pre, "-p", project, "-f", file), args...)...)
		c.Env = append(os.Environ(), "HOBBS_IMAGE="+image, "HOBBS_HOME="+e.inst, "HOBBS_WORKSPACE="+e.ws,
			"HOBBS_UID="+strconv.Itoa(testUID), "HOBBS_GID="+strconv.Itoa(testGID))
		c.Dir = filepath.Dir(file) // the seccomp profile's path is relative to it
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := compose("config", "-q"); err != nil {
		t.Fatalf("compose config: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := compose("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	host := listenOnHost(t)
	out, err := compose("run", "--rm", "-T", "agent", "sh", "-c",
		"id -u; grep CapEff /proc/self/status; netprobe get http://denied.test:8080/x; netprobe resolve example.com; "+
			"for a in "+strings.Join(host.addrs, " ")+"; do echo \"host $a $(netprobe dial $a)\"; done; "+
			"echo 'domains: [evil.test]' >> /home/dev/.hobbs/policy.yaml || echo policy-readonly; "+
			"echo forged >> /home/dev/.hobbs/logs/egress/audit.log || echo audit-readonly; "+
			"ls /home/dev/.hobbs/vault 2>/dev/null || echo no-vault; "+
			"cp /bin/busybox /home/dev/hobbs/workspace/suid && chmod u+s /home/dev/hobbs/workspace/suid || echo setuid-refused; echo done")
	if err != nil {
		t.Fatalf("compose run: %v\n%s", err, out)
	}
	t.Logf("compose run:\n%s", out)
	for _, want := range []string{strconv.Itoa(testUID) + "\n", "CapEff:\t0000000000000000", "status=403", "failed: lookup example.com", "policy-readonly", "audit-readonly", "no-vault", "setuid-refused", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("compose session output lacks %q", want)
		}
	}
	if strings.Contains(out, " connected") || host.accepted.Load() != 0 {
		t.Errorf("the compose agent reached a service on the host (%d connections)", host.accepted.Load())
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "suid")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("a setuid file from the compose agent reached the host: %v", fi.Mode())
	}
	audit, _ := os.ReadFile(filepath.Join(e.inst, "logs", "egress", "audit.log"))
	if !strings.Contains(string(audit), `"subject":"denied.test:8080"`) {
		t.Errorf("compose proxy did not audit the denial:\n%s", audit)
	}
}

// TestDevcontainerCompose checks .devcontainer/docker-compose.yml as compose
// resolves it: the developer container, like the user-mode agent, has the
// files that steer the host and the proxy's audit log read-only, and no
// network, and the Hobbs identity covered; the proxy writes only the audit
// log's directory.
func TestDevcontainerCompose(t *testing.T) {
	e := newEnv(t)
	bin, pre := composeCommand(t)
	file := filepath.Join(repoRoot, ".devcontainer", "docker-compose.yml")
	c := exec.Command(bin, append(pre, "-p", "hobbsdev"+runID, "-f", file, "config")...)
	c.Dir = repoRoot // where the devcontainer tools run compose (the seccomp profile's path)
	c.Env = append(os.Environ(), "HOBBS_DEV_HOME="+e.inst, "HOBBS_UID="+strconv.Itoa(testUID), "HOBBS_GID="+strconv.Itoa(testGID))
	out, err := c.Output()
	if err != nil {
		t.Fatalf("compose config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]struct {
			NetworkMode string      `yaml:"network_mode"`
			Volumes     []yaml.Node // short syntax (docker-compose 1) or long
		}
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("compose config output: %v\n%s", err, out)
	}
	mounts := func(svc string) map[string]bool { // target → writable
		m := map[string]bool{}
		for _, n := range cfg.Services[svc].Volumes {
			if n.Kind == yaml.ScalarNode { // SOURCE:TARGET[:MODE]
				f := strings.Split(n.Value, ":")
				if len(f) >= 2 {
					m[f[1]] = len(f) < 3 || !strings.Contains(","+f[2]+",", ",ro,")
				}
				continue
			}
			var v struct {
				Target   string
				ReadOnly bool `yaml:"read_only"`
			}
			if err := n.Decode(&v); err != nil {
				t.Fatalf("compose config volume: %v", err)
			}
			m[v.Target] = !v.ReadOnly
		}
		return m
	}
	dev, proxy := mounts("dev"), mounts("proxy")
	checkShares(t, "dev container", dev)
	if w, ok := dev["/workspace/.git"]; !ok || w {
		t.Errorf("dev container: the repository's .git is not read-only (mounted %v, writable %v)", ok, w)
	}
	// Developer mode does not load the Hobbs identity (the image's managed
	// CLAUDE.md), which Claude Code would read in every directory.
	if w, ok := dev["/etc/claude-code/CLAUDE.md"]; !ok || w {
		t.Errorf("dev container: the managed CLAUDE.md is not covered read-only (mounted %v, writable %v)", ok, w)
	}
	if cfg.Services["dev"].NetworkMode != "none" {
		t.Errorf("dev container network_mode %q, want none", cfg.Services["dev"].NetworkMode)
	}
	if proxy["/home/dev/.hobbs"] || !proxy["/home/dev/.hobbs/logs/egress"] {
		t.Errorf("proxy mounts: %v (want the instance read-only, logs/egress writable)", proxy)
	}
	if _, ok := proxy["/home/dev/.hobbs/logs"]; ok {
		t.Errorf("the proxy may write all of the instance's logs: %v", proxy)
	}
}

// checkShares checks that a container mounts of the instance exactly its
// shares (instance.AgentShares, what hobbs run mounts), each writable or
// read-only as listed: never the root, the vault, logs/egress or .git.
func checkShares(t *testing.T, what string, m map[string]bool) {
	t.Helper()
	want := map[string]bool{}
	for _, sh := range instance.AgentShares() {
		want["/home/dev/.hobbs/"+sh.Rel] = !sh.ReadOnly
	}
	for target, w := range m {
		if !strings.HasPrefix(target+"/", "/home/dev/.hobbs/") {
			continue
		}
		if ww, ok := want[target]; !ok {
			t.Errorf("%s mounts %s, which is not a share of the instance", what, target)
		} else if w != ww {
			t.Errorf("%s: %s writable=%v, want %v", what, target, w, ww)
		}
	}
	for target := range want {
		if _, ok := m[target]; !ok {
			t.Errorf("%s does not mount the share %s", what, target)
		}
	}
}

// composeCommand is docker-compose, or docker compose.
func composeCommand(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return "docker-compose", nil
	}
	if exec.Command("docker", "compose", "version").Run() != nil {
		tooltest.Skip(t, "neither docker-compose nor docker compose is installed", tooltest.Install("docker-compose"))
	}
	return "docker", []string{"compose"}
}
