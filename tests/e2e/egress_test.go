package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const egressProbe = `set -u
W=/home/dev/hobbs/workspace
touch $W/.probe-started
i=0; while [ ! -e $W/.upstream ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
UP=$(cat $W/.upstream)
echo "allowed=$(netprobe get http://allowed.test:8080/allowed)"
echo "denied=$(netprobe get http://denied.test:8080/denied)"
echo "noauth=$(netprobe get-noauth http://allowed.test:8080/noauth)"
# The ways around the proxy, all at once (each must fail by itself).
( echo "direct_http=$(netprobe direct http://$UP:8080/direct)" > /tmp/p1 ) &
( echo "direct_ip=$(netprobe dial $UP:8080)" > /tmp/p2 ) &
( echo "dns_upstream=$(netprobe resolve allowed.test)" > /tmp/p3 ) &
( echo "dns_outside=$(netprobe resolve example.com)" > /tmp/p4 ) &
( echo "ipv6_connect=$(netprobe dial [2001:db8::1]:80)" > /tmp/p5 ) &
# The host's own services (listening on every address) through each of the
# host's addresses: the gateway of a Docker network is one of them.
( for a in $(cat $W/.hostaddrs); do echo "host $a $(netprobe dial $a)"; done > /tmp/p6 ) &
wait
cat /tmp/p1 /tmp/p2 /tmp/p3 /tmp/p4 /tmp/p5 /tmp/p6
echo "ipv6_global=$(grep -v -e ' lo$' -e '^fe80' /proc/net/if_inet6 | wc -l)"
touch $W/.probe-done
i=0; while [ ! -e $W/.upstream-gone ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
`

// privateRanges opens the private ranges Docker's networks use to the
// proxy's address guard (the test upstreams live there).
const privateRanges = "allow_private:\n  - 10.0.0.0/8\n  - 172.16.0.0/12\n  - 192.168.0.0/16\n"

// startProbe starts session name running script (as probe.sh in the
// workspace) and waits until the script has started; the session's output
// is gathered in out and errb.
func (e *env) startProbe(t *testing.T, name, script string) (c *exec.Cmd, out, errb *strings.Builder) {
	t.Helper()
	writeFile(t, filepath.Join(e.ws, "probe.sh"), script)
	c = e.command(nil, e.runArgs(name, "sh", "/home/dev/hobbs/workspace/probe.sh")...)
	out, errb = &strings.Builder{}, &strings.Builder{}
	c.Stdout, c.Stderr = out, errb
	e.start(t, c)
	waitFor(t, 60*time.Second, "the probe to start", func() bool { return exists(filepath.Join(e.ws, ".probe-started")) })
	return c, out, errb
}

// hostService is a TCP server on the host, on every address (as a user's
// local database or development server may be), counting connections.
type hostService struct {
	addrs    []string // HOST:PORT for each of the host's IPv4 addresses but loopback
	accepted atomic.Int64
}

func listenOnHost(t *testing.T) *hostService {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := &hostService{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			h.addrs = append(h.addrs, net.JoinHostPort(n.IP.String(), strconv.Itoa(port)))
		}
	}
	if len(h.addrs) == 0 {
		t.Fatal("the host has no IPv4 address but loopback")
	}
	return h
}

// TestEgress runs an upstream web server under an allowed and a denied
// name on a network of its own, which the proxy joins (egress_network:
// NAME), and checks every way out of the agent.
func TestEgress(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), "domains:\n  - allowed.test:8080\n"+privateRanges)
	name := sessionName(t, "egress")
	upNet := name + "-up"
	docker(t, "network", "create", "--label", "hobbs-e2e="+runID, upNet)
	defer docker(t, "network", "rm", upNet) // after the upstream (deferred below)
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "egress_network: "+upNet+"\n")

	// The upstream: busybox httpd from the test base, on that network
	// only, under two names.
	up := name + "-upstream"
	docker(t, "run", "-d", "--name", up, "--label", "hobbs-e2e="+runID, "--network", upNet,
		"--network-alias", "allowed.test", "--network-alias", "denied.test", baseImage,
		"netprobe", "serve", ":8080")
	removed := false
	removeUp := func() {
		if !removed {
			removed = true
			docker(t, "rm", "-f", up)
		}
	}
	defer removeUp()
	ip := docker(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", up)

	c, out, errb := e.startProbe(t, name, egressProbe)
	// The host's addresses once the session's objects exist.
	host := listenOnHost(t)
	writeFile(t, filepath.Join(e.ws, ".hostaddrs"), strings.Join(host.addrs, "\n"))
	writeFile(t, filepath.Join(e.ws, ".upstream"), ip)
	waitFor(t, 90*time.Second, "the probe to finish", func() bool { return exists(filepath.Join(e.ws, ".probe-done")) })
	upLog := docker(t, "logs", up)
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
	check("allowed", "status=200 body=upstream-ok")
	check("denied", "status=403")
	check("noauth", "status=407")
	check("direct_http", "error=")
	check("direct_ip", "failed")
	check("dns_upstream", "failed")
	check("dns_outside", "failed")
	check("ipv6_global", "0")
	check("ipv6_connect", "failed")
	// The host's services are out of reach: every address was tried, and
	// no connection arrived.
	tried := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "host" {
			tried++
			if f[2] != "failed:" {
				t.Errorf("the agent reached the host's service at %s: %s", f[1], l)
			}
		}
	}
	if tried != len(host.addrs) {
		t.Errorf("the probe tried %d of the host's %d addresses", tried, len(host.addrs))
	}
	if n := host.accepted.Load(); n != 0 {
		t.Errorf("the host's service accepted %d connections from the agent", n)
	}
	// What reached the upstream: the allowed request, nothing else.
	t.Logf("upstream log:\n%s", upLog)
	if !strings.Contains(upLog, "request host=allowed.test:8080 path=/allowed") {
		t.Errorf("the allowed request did not reach the upstream")
	}
	for _, never := range []string{"/denied", "/noauth", "/direct"} {
		if strings.Contains(upLog, "path="+never) {
			t.Errorf("request %s reached the upstream", never)
		}
	}

	// The audit log on the host has both decisions.
	f, err := os.Open(filepath.Join(e.inst, "logs", "egress", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allow, deny bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct{ Event, Subject, Outcome string }
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			t.Errorf("audit line is not JSON: %s", sc.Text())
			continue
		}
		if m.Event == "egress.allow" && m.Subject == "allowed.test:8080" && m.Outcome == "allowed" {
			allow = true
		}
		if m.Event == "egress.deny" && m.Subject == "denied.test:8080" && m.Outcome == "denied" {
			deny = true
		}
	}
	if !allow || !deny {
		b, _ := os.ReadFile(filepath.Join(e.inst, "logs", "egress", "audit.log"))
		t.Errorf("audit log: allow decision %v, deny decision %v:\n%s", allow, deny, b)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the session: %v", left)
	}
	if out := docker(t, "network", "ls", "-q", "--filter", "name=^"+upNet+"$"); out == "" {
		t.Errorf("the session removed the network %s, which it did not create", upNet)
	}
}

const holdProbe = `set -u
W=/home/dev/hobbs/workspace
touch $W/.probe-started
i=0; while [ ! -e $W/.hold ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
netprobe tunnel $(cat $W/.hold) > /tmp/t 2>&1 &
i=0; while ! grep -q tunnel= /tmp/t && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
cat /tmp/t
`

// TestAuditOfTunnelOpenAtExit: the session ends while a tunnel is still open
// (its client went with the agent; its server has not hung up). The proxy
// writes a tunnel's audit line when the tunnel closes, so it must be stopped
// (SIGTERM: it closes what is left and writes every line), not killed: with
// `rm -f` (SIGKILL) this line was never written. The proxy reaches the
// host's server through the gateway of its network: the engine's default
// one, or (egress_network: session) the session's own.
func TestAuditOfTunnelOpenAtExit(t *testing.T) {
	t.Run("default", func(t *testing.T) { testAuditOfTunnelOpenAtExit(t, "default") })
	t.Run("session", func(t *testing.T) { testAuditOfTunnelOpenAtExit(t, "session") })
}

// waitProxyLog waits until the proxy container's log holds want.
func waitProxyLog(t *testing.T, proxy, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		logs, _ := exec.Command("docker", "logs", proxy).CombinedOutput()
		if strings.Contains(string(logs), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy's log never said %q:\n%s", want, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testAuditOfTunnelOpenAtExit(t *testing.T, mode string) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "egress_network: "+mode+"\n")
	e.removeVolume(t)
	// A server on the host that reads and never hangs up.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the proxy's half-close; then keep c open
		got <- string(b)
		time.Sleep(time.Minute)
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	policy := filepath.Join(e.inst, "policy.yaml")
	writeFile(t, policy, privateRanges)
	name := sessionName(t, "hold-"+mode)
	c, out, errb := e.startProbe(t, name, holdProbe)
	// The gateway of the proxy's one network.
	gw := docker(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.Gateway}}{{end}}", name+"-proxy")
	if mode == "session" {
		if n := docker(t, "inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", name+"-proxy"); n != name+"-egress" {
			t.Errorf("egress_network: session: the proxy is on %q", n)
		}
	}
	target := fmt.Sprintf("%s:%d", gw, port)
	// The proxy reloads the policy that allows target; the probe dials only
	// once the proxy says it has (its log's "policy reloaded" line with the
	// one domain), so the tunnel never races the reload.
	writeFile(t, policy, "domains:\n  - \""+target+"\"\n"+privateRanges)
	waitProxyLog(t, name+"-proxy", "domains=1 deny=0 allow_private=3 ")
	writeFile(t, filepath.Join(e.ws, ".hold"), target)
	if err := c.Wait(); err != nil {
		t.Fatalf("session: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "tunnel=open") {
		t.Fatalf("the tunnel did not open:\n%s\n%s", out.String(), errb.String())
	}
	select {
	case b := <-got:
		if b != "held-bytes\n" {
			t.Errorf("the server got %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the server never saw the tunnel's end")
	}
	b, err := os.ReadFile(filepath.Join(e.inst, "logs", "egress", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Event, Subject, Outcome string
			Detail                  struct {
				BytesUp int64 `json:"bytes_up"`
			}
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Event == "egress.allow" && m.Subject == target {
			found = true
			if m.Detail.BytesUp != int64(len("held-bytes\n")) {
				t.Errorf("tunnel line with bytes_up %d, want %d: %s", m.Detail.BytesUp, len("held-bytes\n"), l)
			}
		}
	}
	if !found {
		t.Errorf("no audit line for the tunnel to %s open at the session's end:\n%s", target, b)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the session: %v", left)
	}
}
