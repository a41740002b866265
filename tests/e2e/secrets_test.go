package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	boundValue = "ghp_E2EboundValue0123456789abcdefghijklm"
	plainValue = "plain-E2E-value-0123456789abcdef"
)

// secretsProbe runs in the agent: what it holds, then requests through
// the proxy to the bound HTTPS host, to another host with the placeholder,
// to the plain-HTTP host its other secret is bound to, and two that the
// bound host's request rules decide.
const secretsProbe = `set -u
W=/home/dev/hobbs/workspace
TLS=$1; PLAIN=$2
echo "gh=$GH_TOKEN"
echo "other=$OTHER_KEY"
cat /proc/[0-9]*/environ > $W/.environ 2>/dev/null
echo "cafile=${SSL_CERT_FILE:-none}"
echo "bound=$(netprobe req GET https://$TLS/bound "Authorization: Bearer $GH_TOKEN")"
echo "leak=$(netprobe req GET http://$PLAIN/leak "Authorization: Bearer $GH_TOKEN")"
echo "plainbound=$(netprobe req GET http://$PLAIN/plain "X-Key: $OTHER_KEY")"
echo "delete=$(netprobe req DELETE https://$TLS/x)"
echo "get=$(netprobe req GET https://$TLS/y)"
touch $W/.ready
i=0; while [ ! -e $W/.inspected ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
`

// TestSecretsAtProxy: a secret bound to a host in config.yaml reaches the
// agent only as a placeholder; the proxy puts the value in requests to
// that host (HTTPS, intercepted with the session CA, and plain HTTP),
// refuses the placeholder elsewhere as a leak, and applies request rules.
// The value is in no container's configuration.
func TestSecretsAtProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	for name, v := range map[string]string{"gh-token": boundValue, "other-key": plainValue} {
		if r := e.hobbs([]byte(v), "vault", "set", name); r.code != 0 {
			t.Fatalf("vault set: %s", r.stderr)
		}
	}
	gw := bridgeGateway(t)
	if net.ParseIP(gw) == nil {
		t.Fatalf("no gateway address for the default bridge: %q", gw)
	}

	// The upstreams, on the host (every address): an HTTPS server with a
	// certificate for the gateway address, and a plain-HTTP one.
	var mu sync.Mutex
	var got []string
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s auth=%q key=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Key")))
		mu.Unlock()
		fmt.Fprint(w, "upstream-ok")
	}
	certPEM, cert := gatewayCert(t, gw)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(record))
	tlsSrv.Listener = listen4(t)
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewUnstartedServer(http.HandlerFunc(record))
	plainSrv.Listener = listen4(t)
	plainSrv.Start()
	defer plainSrv.Close()
	tlsHost := fmt.Sprintf("%s:%d", gw, tlsSrv.Listener.Addr().(*net.TCPAddr).Port)
	plainHost := fmt.Sprintf("%s:%d", gw, plainSrv.Listener.Addr().(*net.TCPAddr).Port)

	writeFile(t, filepath.Join(e.inst, "policy.yaml"), fmt.Sprintf(
		"domains: [%q, %q]\nallow_private: [%s/32]\nrules:\n  %q: [\"deny DELETE\"]\n", tlsHost, plainHost, gw, tlsHost))
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf(
		"secrets:\n  GH_TOKEN:\n    vault: gh-token\n    hosts: [%q]\n  OTHER_KEY:\n    vault: other-key\n    hosts: [%q]\n", tlsHost, plainHost))
	caFile := filepath.Join(e.dir, "upstream.pem")
	writeFile(t, caFile, certPEM)
	os.Chmod(caFile, 0o644)

	name := sessionName(t, "secrets")
	c := commandAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst, "HOBBS_TEST_UPSTREAM_CA=" + caFile},
		e.runArgs(name, "sh", "-c", secretsProbe, "probe", tlsHost, plainHost)...)
	tc := startTimed(t, c)
	ready := filepath.Join(e.ws, ".ready")
	deadline := time.Now().Add(90 * time.Second)
	for !exists(ready) && time.Now().Before(deadline) && tc.running() {
		time.Sleep(100 * time.Millisecond)
	}
	inspected := map[string]string{}
	if exists(ready) {
		inspected = engineConfigs(t, name, name+"-proxy")
	}
	writeFile(t, filepath.Join(e.ws, ".inspected"), "")
	r, timedOut := tc.wait(time.Minute)
	t.Logf("session (exit %d, timed out %v)\n--- stdout\n%s--- stderr\n%s", r.code, timedOut, r.stdout, r.stderr)
	if !exists(ready) || r.code != 0 {
		t.Fatalf("the session did not run its probe")
	}
	p := kv(r.stdout)

	// The agent holds placeholders of the values' shape, never the values.
	if p["gh"] == "" || p["gh"] == boundValue || len(p["gh"]) != len(boundValue) || !strings.HasPrefix(p["gh"], "ghp_") {
		t.Errorf("GH_TOKEN in the agent is %q: want a placeholder shaped like the value", p["gh"])
	}
	if p["other"] == "" || p["other"] == plainValue {
		t.Errorf("OTHER_KEY in the agent is %q: want a placeholder", p["other"])
	}
	environ, err := os.ReadFile(filepath.Join(e.ws, ".environ"))
	switch {
	case err != nil || !strings.Contains(string(environ), "GH_TOKEN="+p["gh"]):
		t.Errorf("the agent's process environments were not read, or lack the placeholder (%v)", err)
	case strings.Contains(string(environ), boundValue) || strings.Contains(string(environ), plainValue):
		t.Error("a secret value is in a process environment of the agent's container")
	}
	for where, text := range inspected {
		if strings.Contains(text, boundValue) || strings.Contains(text, plainValue) {
			t.Errorf("a secret value is in %s", where)
		}
	}
	if len(inspected) == 0 {
		t.Error("no container configuration was checked")
	}

	// What the proxy did with each request.
	want := map[string]string{
		"bound":      "status=200 body=upstream-ok",
		"plainbound": "status=200 body=upstream-ok",
		"get":        "status=200 body=upstream-ok",
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s: got %q, want %q", k, p[k], v)
		}
	}
	if !strings.HasPrefix(p["leak"], "status=403") || !strings.Contains(p["leak"], "GH_TOKEN") || strings.Contains(p["leak"], boundValue) {
		t.Errorf("leak: got %q, want a 403 naming GH_TOKEN", p["leak"])
	}
	if !strings.HasPrefix(p["delete"], "status=403") || !strings.Contains(p["delete"], "deny DELETE") {
		t.Errorf("delete: got %q, want a 403 naming the rule", p["delete"])
	}
	mu.Lock()
	seen := strings.Join(got, "\n")
	mu.Unlock()
	for _, w := range []string{
		fmt.Sprintf("GET /bound auth=%q", "Bearer "+boundValue),
		fmt.Sprintf("GET /plain auth=\"\" key=%q", plainValue),
		"GET /y auth=",
	} {
		if !strings.Contains(seen, w) {
			t.Errorf("the upstreams did not get %s; they got:\n%s", w, seen)
		}
	}
	for _, no := range []string{"/leak", "DELETE"} {
		if strings.Contains(seen, no) {
			t.Errorf("a refused request reached an upstream (%s):\n%s", no, seen)
		}
	}

	// The audit log names the leak and the rule, never a value.
	var logs string
	for _, f := range egressAuditLogs(e) {
		b, _ := os.ReadFile(f)
		logs += string(b)
	}
	if !strings.Contains(logs, `"event":"egress.leak"`) || !strings.Contains(logs, `"leak":"GH_TOKEN"`) {
		t.Errorf("no egress.leak line naming GH_TOKEN in the audit log:\n%s", logs)
	}
	if !strings.Contains(logs, "deny DELETE") {
		t.Errorf("the audit log does not name the request rule:\n%s", logs)
	}
	if strings.Contains(logs, boundValue) || strings.Contains(logs, plainValue) {
		t.Error("a secret value is in the audit log")
	}
}

// bridgeGateway is the default bridge's gateway: the one the engine names,
// else the first address of its subnet (what Docker gives the bridge).
func bridgeGateway(t *testing.T) string {
	t.Helper()
	out := strings.Fields(docker(t, "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{end}}"))
	for _, f := range out {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f
		}
	}
	for _, f := range out {
		if p, err := netip.ParsePrefix(f); err == nil && p.Addr().Is4() {
			return p.Masked().Addr().Next().String()
		}
	}
	return ""
}

// listen4 listens on every IPv4 address of the host (the proxy reaches it
// through the bridge's gateway).
func listen4(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// gatewayCert is a self-signed certificate for the IP address gw.
func gatewayCert(t *testing.T, gw string) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: gw},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP(gw)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
