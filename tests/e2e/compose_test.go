package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompose checks dist/docker-compose.yml: it validates, and brought up it
// gives the agent the proxy as its only way out.
func TestCompose(t *testing.T) {
	e := newEnv(t)
	bin, pre := "docker-compose", []string{}
	if _, err := exec.LookPath(bin); err != nil {
		if exec.Command("docker", "compose", "version").Run() != nil {
			t.Fatalf("neither docker-compose nor docker compose is installed (.ci/run installs docker-compose)")
		}
		bin, pre = "docker", []string{"compose"}
	}
	project := "hobbse2e" + runID
	file := filepath.Join(repoRoot, "dist", "docker-compose.yml")
	compose := func(args ...string) (string, error) {
		c := exec.Command(bin, append(append(pre, "-p", project, "-f", file), args...)...)
		c.Env = append(os.Environ(), "HOBBS_IMAGE="+image, "HOBBS_HOME="+e.inst, "HOBBS_WORKSPACE="+e.ws,
			"HOBBS_UID="+strconv.Itoa(testUID), "HOBBS_GID="+strconv.Itoa(testGID))
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
			"echo 'domains: [evil.test]' >> /home/dev/.hobbs/policy.yaml || echo policy-readonly; echo done")
	if err != nil {
		t.Fatalf("compose run: %v\n%s", err, out)
	}
	t.Logf("compose run:\n%s", out)
	for _, want := range []string{strconv.Itoa(testUID) + "\n", "CapEff:\t0000000000000000", "status=403", "failed: lookup example.com", "policy-readonly", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("compose session output lacks %q", want)
		}
	}
	if strings.Contains(out, " connected") || host.accepted.Load() != 0 {
		t.Errorf("the compose agent reached a service on the host (%d connections)", host.accepted.Load())
	}
	audit, _ := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
	if !strings.Contains(string(audit), `"subject":"denied.test:8080"`) {
		t.Errorf("compose proxy did not audit the denial:\n%s", audit)
	}
}
