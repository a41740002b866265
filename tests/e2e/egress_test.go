package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const egressProbe = `set -u
W=/home/dev/hobbs/workspace
touch $W/.probe-started
i=0; while [ ! -e $W/.upstream ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
UP=$(cat $W/.upstream)
# Allowed through the proxy (busybox wget uses http_proxy with its credentials).
echo "allowed=$(wget -q -T 10 -O - http://allowed.test:8080/ok.txt 2>&1 | tr '\n' ' ')"
# Denied through the proxy: 403.
echo "denied=$(wget -q -T 10 -O - http://denied.test:8080/ok.txt 2>&1 | tr '\n' ' ')"
echo "denied_s=$(wget -S -T 10 -O /dev/null http://denied.test:8080/ok.txt 2>&1 | grep -m1 'HTTP/' | tr -d '\r')"
# Without credentials: 407.
echo "noauth=$(http_proxy=http://proxy:3128 wget -S -T 10 -O /dev/null http://allowed.test:8080/ok.txt 2>&1 | grep -m1 'HTTP/' | tr -d '\r')"
# Direct, around the proxy: to the upstream's address, by name, over IPv6.
if nc -w 3 "$UP" 8080 </dev/null >/dev/null 2>&1; then echo direct_ip=connected; else echo direct_ip=failed; fi
if env -u http_proxy -u HTTP_PROXY wget -q -T 3 -O - "http://$UP:8080/ok.txt" >/dev/null 2>&1; then echo direct_http=ok; else echo direct_http=failed; fi
if nslookup allowed.test >/dev/null 2>&1; then echo dns_upstream=resolved; else echo dns_upstream=failed; fi
if nslookup example.com >/dev/null 2>&1; then echo dns_outside=resolved; else echo dns_outside=failed; fi
echo "ipv6_global=$(grep -cv -e ' lo$' -e '^fe80' /proc/net/if_inet6 2>/dev/null || echo 0)"
if nc -w 3 2001:db8::1 80 </dev/null >/dev/null 2>&1; then echo ipv6_connect=connected; else echo ipv6_connect=failed; fi
touch $W/.probe-done
i=0; while [ ! -e $W/.upstream-gone ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
`

// TestEgress runs an upstream web server on the session's egress network
// under an allowed and a denied name, and checks every way out of the agent.
func TestEgress(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	writeFile(t, filepath.Join(e.inst, "policy.yaml"),
		"domains:\n  - allowed.test:8080\nallow_private:\n  - 10.0.0.0/8\n  - 172.16.0.0/12\n  - 192.168.0.0/16\n")
	writeFile(t, filepath.Join(e.ws, "probe.sh"), egressProbe)
	name := sessionName(t, "egress")
	c := e.command(nil, e.runArgs(name, "sh", "/home/dev/hobbs/workspace/probe.sh")...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill() }()
	waitFor(t, 60*time.Second, "the probe to start", func() bool { return exists(filepath.Join(e.ws, ".probe-started")) })

	// The upstream: busybox httpd from the test base, on the session's
	// egress network only, under two names.
	up := name + "-upstream"
	docker(t, "run", "-d", "--name", up, "--label", "hobbs-e2e="+runID, "--network", name+"-egress",
		"--network-alias", "allowed.test", "--network-alias", "denied.test", baseImage,
		"sh", "-c", "mkdir -p /www && echo upstream-ok > /www/ok.txt && exec httpd -f -p 8080 -h /www")
	removed := false
	removeUp := func() {
		if !removed {
			removed = true
			docker(t, "rm", "-f", up)
		}
	}
	defer removeUp()
	ip := docker(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", up)
	writeFile(t, filepath.Join(e.ws, ".upstream"), ip)
	waitFor(t, 90*time.Second, "the probe to finish", func() bool { return exists(filepath.Join(e.ws, ".probe-done")) })
	removeUp()
	writeFile(t, filepath.Join(e.ws, ".upstream-gone"), "")
	if err := c.Wait(); err != nil {
		t.Fatalf("session: %v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Logf("probe output:\n%s", out.String())
	p := kv(out.String())
	check := func(key, want string) {
		t.Helper()
		if !strings.Contains(p[key], want) {
			t.Errorf("%s = %q, want it to contain %q", key, p[key], want)
		}
	}
	check("allowed", "upstream-ok")
	check("denied_s", "403")
	check("noauth", "407")
	check("direct_ip", "failed")
	check("direct_http", "failed")
	check("dns_upstream", "failed")
	check("dns_outside", "failed")
	check("ipv6_global", "0")
	check("ipv6_connect", "failed")
	if strings.Contains(p["denied"], "upstream-ok") {
		t.Errorf("denied name reached the upstream: %q", p["denied"])
	}

	// The audit log on the host has both decisions.
	f, err := os.Open(filepath.Join(e.inst, "logs", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allow, deny bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			t.Errorf("audit line is not JSON: %s", sc.Text())
			continue
		}
		line := sc.Text()
		if strings.Contains(line, "allowed.test") && strings.Contains(line, `"allow`) {
			allow = true
		}
		if strings.Contains(line, "denied.test") && strings.Contains(line, `"deny`) {
			deny = true
		}
	}
	if !allow || !deny {
		b, _ := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
		t.Errorf("audit log: allow decision %v, deny decision %v:\n%s", allow, deny, b)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the session: %v", left)
	}
}
