package egress

// The adversarial suite: every way we know to talk the proxy into reaching
// something the policy does not allow. Each case runs against a fresh proxy
// and a fresh counting target and asserts that not one byte reached it. The
// few positive controls prove the harness can see a connection at all.

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// basePolicy allows allowed.test and *.wild.test on the target's port, the
// port-less portless.test, and rebind.test/mixed.test/meta.test (which the
// fake resolver points at addresses the guard refuses). Only 127.0.0.1 is
// opened by allow_private.
func basePolicy(port int) string {
	return fmt.Sprintf(`
domains:
  - allowed.test:%[1]d
  - "*.wild.test:%[1]d"
  - portless.test
  - rebind.test:%[1]d
  - mixed.test:%[1]d
  - meta.test:%[1]d
  - "*.deny.test:%[1]d"
deny:
  - bad.deny.test
allow_private: [127.0.0.1/32]
`, port)
}

func resolverWithTraps(o *Options) {
	o.LookupNetIP = fakeResolver(map[string][]string{
		"rebind.test": {"127.0.0.2"},
		"mixed.test":  {"127.0.0.1", "127.0.0.2"},
		"meta.test":   {"169.254.169.254"},
	})
}

func TestPositiveControls(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
	p := tg.port
	for _, auth := range []string{
		fmt.Sprintf("allowed.test:%d", p),
		fmt.Sprintf("ALLOWED.Test.:%d", p), // case and trailing dot normalise to the listed name
		fmt.Sprintf("a.wild.test:%d", p),
		fmt.Sprintf("a.b.wild.test:%d", p),
		fmt.Sprintf("ok.deny.test:%d", p),
	} {
		code, body := e.tunnel(t, auth, "")
		if code != 200 || !strings.Contains(body, "target ok") {
			t.Fatalf("CONNECT %s: %d %s", auth, code, body)
		}
	}
	code, body := e.raw(t, fmt.Sprintf("GET http://allowed.test:%d/x HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", p, p))
	if code != 200 || !strings.Contains(body, "target ok") {
		t.Fatalf("plain GET: %d %s", code, body)
	}
	if tg.conns.Load() != 6 {
		t.Fatalf("target saw %d connections, want 6", tg.conns.Load())
	}
	var audit string
	mustWaitFor(t, 10*time.Second, func() bool {
		audit = readFile(t, e.audit)
		return strings.Count(audit, `"event":"egress.allow"`) >= 6
	})
	if strings.Count(audit, `"event":"egress.allow"`) < 6 {
		t.Fatalf("audit log misses allow lines:\n%s", audit)
	}
}

func TestConnectBypasses(t *testing.T) {
	cases := []struct{ name, authority string }{
		{"unlisted name", "denied.test:%d"},
		{"suffix appended", "allowed.test.evil.test:%d"},
		{"prefix glued", "evilallowed.test:%d"},
		{"wildcard glued", "evilwild.test:%d"},
		{"wildcard apex not included", "wild.test:%d"},
		{"wildcard suffix appended", "a.wild.test.evil.test:%d"},
		{"deny wins over wildcard", "bad.deny.test:%d"},
		{"deny wins case-insensitively", "BAD.deny.TEST.:%d"},
		{"port not listed", "allowed.test:22"},
		{"port-less entry allows only 443 for CONNECT", "portless.test:%d"},
		{"port with leading zero", "allowed.test:0%d"},
		{"port with plus sign", "allowed.test:+%d"},
		{"port overflowing 16 bits", "allowed.test:%d"}, // replaced below
		{"no port", "allowed.test"},
		{"empty host", ":%d"},
		{"double trailing dot", "allowed.test..:%d"},
		{"userinfo smuggling", "allowed.test:%[1]d@denied.test:%[1]d"},
		{"absolute URI as CONNECT target", "http://allowed.test:%d/"},
		{"path after authority", "allowed.test:%d/x"},
		{"IPv4 dotted", "127.0.0.1:%d"},
		{"IPv4 short form", "127.1:%d"},
		{"IPv4 decimal integer", "2130706433:%d"},
		{"IPv4 hex octet", "0x7f.0.0.1:%d"},
		{"IPv4 hex integer", "0x7f000001:%d"},
		{"IPv4 octal", "0177.0.0.1:%d"},
		{"IPv4 zero padded", "127.000.000.001:%d"},
		{"IPv4-mapped IPv6", "[::ffff:127.0.0.1]:%d"},
		{"IPv4-mapped IPv6 hex", "[::ffff:7f00:1]:%d"},
		{"IPv6 loopback", "[::1]:%d"},
		{"IPv6 with zone id", "[fe80::1%%25lo]:%d"},
		{"IDN homograph (Cyrillic a)", "\u0430llowed.test:%d"},
		{"punycode of a homograph", "xn--llowed-3ve.test:%d"},
		{"percent-encoded host", "%%61llowed.test:%d"},
		{"NUL in host", "allowed.test\x00.evil:%d"},
		{"name resolving to a refused private address", "rebind.test:%d"},
		{"name resolving to allowed and refused addresses", "mixed.test:%d"},
		{"name resolving to cloud metadata", "meta.test:%d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own proxy and targets
			tg := newTarget(t, "127.0.0.1")
			tg2 := newTargetOnPort(t, "127.0.0.2", tg.port)
			e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
			auth := c.authority
			if strings.Contains(auth, "%") {
				auth = fmt.Sprintf(c.authority, tg.port)
			}
			if c.name == "port overflowing 16 bits" {
				auth = fmt.Sprintf("allowed.test:%d", tg.port+65536)
			}
			code, body := e.tunnel(t, auth, "")
			if code == 200 {
				t.Fatalf("CONNECT %q established: %s", auth, body)
			}
			if code != 403 && code != 400 {
				t.Fatalf("CONNECT %q: status %d, want 403 or 400: %s", auth, code, body)
			}
			tg.assertUntouched(t, tg2)
		})
	}
}

// newTargetOnPort starts a second target on another loopback address and the
// same port, so that a leak through a name resolving to 127.0.0.2 would be
// counted. It returns nil where the address cannot be bound.
func newTargetOnPort(t testing.TB, ip string, port int) *target {
	t.Helper()
	tg, err := tryTarget(ip, port)
	if err != nil {
		t.Fatalf("second loopback target on %s:%d: %v", ip, port, err)
	}
	t.Cleanup(func() { tg.srv.Close() })
	return tg
}

func TestPlainHTTPBypasses(t *testing.T) {
	cases := []struct{ name, req string }{
		{"unlisted name", "GET http://denied.test:%[1]d/ HTTP/1.1\r\nHost: denied.test:%[1]d\r\n\r\n"},
		{"Host header names an allowed host, URL does not", "GET http://denied.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"},
		{"origin-form request with allowed Host", "GET / HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"},
		{"origin-form request, absolute path", "GET //allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"},
		{"https scheme on the plain path", "GET https://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"},
		{"other scheme", "GET ftp://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"},
		{"userinfo in URL", "GET http://allowed.test:%[1]d@denied.test:%[1]d/ HTTP/1.1\r\nHost: denied.test:%[1]d\r\n\r\n"},
		{"suffix appended", "GET http://allowed.test.evil.test:%[1]d/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"IP literal", "GET http://127.0.0.1:%[1]d/ HTTP/1.1\r\nHost: 127.0.0.1:%[1]d\r\n\r\n"},
		{"IP literal decimal", "GET http://2130706433:%[1]d/ HTTP/1.1\r\nHost: 2130706433:%[1]d\r\n\r\n"},
		{"IPv6 mapped", "GET http://[::ffff:127.0.0.1]:%[1]d/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"port not listed", "GET http://allowed.test:22/ HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n"},
		{"port-less entry allows only 80 and 443", "GET http://portless.test:%[1]d/ HTTP/1.1\r\nHost: portless.test:%[1]d\r\n\r\n"},
		{"websocket upgrade to a denied host", "GET http://denied.test:%[1]d/ws HTTP/1.1\r\nHost: denied.test:%[1]d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"},
		{"name resolving to a refused private address", "GET http://rebind.test:%[1]d/ HTTP/1.1\r\nHost: rebind.test:%[1]d\r\n\r\n"},
		{"name resolving to cloud metadata", "GET http://meta.test:%[1]d/ HTTP/1.1\r\nHost: meta.test:%[1]d\r\n\r\n"},
		{"deny wins", "GET http://bad.deny.test:%[1]d/ HTTP/1.1\r\nHost: bad.deny.test:%[1]d\r\n\r\n"},
		{"HTTP/1.0 absolute form", "GET http://denied.test:%[1]d/ HTTP/1.0\r\n\r\n"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own proxy and targets
			tg := newTarget(t, "127.0.0.1")
			tg2 := newTargetOnPort(t, "127.0.0.2", tg.port)
			e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
			req := c.req
			if strings.Contains(req, "%[1]d") {
				req = fmt.Sprintf(req, tg.port)
			}
			code, body := e.raw(t, req)
			if code < 400 || code == 502 {
				t.Fatalf("%q: status %d, want a refusal: %s", firstLine(req), code, body)
			}
			tg.assertUntouched(t, tg2)
		})
	}
}

// TestHostHeaderNeverForwarded: for an absolute-form request the target is
// the URL's host; a different Host header is dropped, never forwarded.
func TestHostHeaderNeverForwarded(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
	code, body := e.raw(t, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", tg.port))
	if code == 200 {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		for _, h := range tg.hosts {
			if h != fmt.Sprintf("allowed.test:%d", tg.port) {
				t.Fatalf("target saw Host %q", h)
			}
		}
		return
	}
	if code != 403 && code != 400 {
		t.Fatalf("status %d: %s", code, body)
	}
	tg.assertUntouched(t)
}

func TestDenialNamesRule(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
	code, body := e.tunnel(t, fmt.Sprintf("bad.deny.test:%d", tg.port), "")
	if code != 403 || !strings.Contains(body, "deny") || !strings.Contains(body, "bad.deny.test") {
		t.Fatalf("%d %q: want 403 naming the deny rule", code, body)
	}
	code, body = e.tunnel(t, fmt.Sprintf("rebind.test:%d", tg.port), "")
	if code != 403 || !strings.Contains(body, "127.0.0.2") {
		t.Fatalf("%d %q: want 403 naming the refused address", code, body)
	}
	code, body = e.tunnel(t, fmt.Sprintf("nope.test:%d", tg.port), "")
	if code != 403 || !strings.Contains(body, "default") {
		t.Fatalf("%d %q: want 403 naming the default rule", code, body)
	}
	// A host the policy does not list: the answer says how to allow it.
	if want := fmt.Sprintf("hobbs policy allow nope.test:%d", tg.port); !strings.Contains(body, want) {
		t.Fatalf("%q: want the hint %q", body, want)
	}
	if _, body = e.raw(t, "GET http://NOPE.test./x HTTP/1.1\r\nHost: NOPE.test.\r\nConnection: close\r\n\r\n"); !strings.Contains(body, "hobbs policy allow nope.test\n") {
		t.Fatalf("%q: want the hint naming the canonical host, without the default port", body)
	}
	// The deny list and the address guard are not a missing allow.
	for _, host := range []string{"bad.deny.test", "rebind.test"} {
		if _, body := e.tunnel(t, fmt.Sprintf("%s:%d", host, tg.port), ""); strings.Contains(body, "policy allow") {
			t.Fatalf("%s: %q suggests an allow", host, body)
		}
	}
	e.srv.Shutdown(t.Context()) // flushes the audit log
	audit := readFile(t, e.audit)
	for _, want := range []string{`"event":"egress.deny"`, `"outcome":"denied"`, `"subject":"bad.deny.test:`, `"rule":"deny`, `"actor":"proxy"`} {
		if !strings.Contains(audit, want) {
			t.Fatalf("audit log lacks %s:\n%s", want, audit)
		}
	}
}

// TestPipelinedRequestsEachChecked: a second request on a kept-alive
// connection, even written in the same packet as the first, is checked on
// its own.
func TestPipelinedRequestsEachChecked(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), resolverWithTraps)
	p := tg.port
	req := fmt.Sprintf("GET http://allowed.test:%[1]d/1 HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n\r\n"+
		"GET http://denied.test:%[1]d/2 HTTP/1.1\r\nHost: denied.test:%[1]d\r\n\r\n"+
		"GET http://127.0.0.1:%[1]d/3 HTTP/1.1\r\nHost: 127.0.0.1:%[1]d\r\nConnection: close\r\n\r\n", p)
	codes := pipeline(t, e.addr, req, 3)
	if codes[0] != 200 || codes[1] != 403 || codes[2] != 403 {
		t.Fatalf("pipelined statuses %v, want [200 403 403]", codes)
	}
	if n := tg.requests.Load(); n != 1 {
		t.Fatalf("target served %d requests, want 1", n)
	}
}

func TestProxyAuth(t *testing.T) {
	const token = "s3cret-proxy-token-value"
	basic := func(u, p string) string {
		return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) + "\r\n"
	}
	bad := map[string]string{
		"missing":       "",
		"wrong token":   basic("hobbs", "nope"),
		"wrong user":    basic("admin", token),
		"token prefix":  basic("hobbs", token[:10]),
		"bearer scheme": "Proxy-Authorization: Bearer " + token + "\r\n",
		"not base64":    "Proxy-Authorization: Basic hobbs:" + token + "\r\n",
		"in Authorization instead": "Authorization: Basic " +
			base64.StdEncoding.EncodeToString([]byte("hobbs:"+token)) + "\r\n",
	}
	for name, hdr := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each case has its own proxy and target
			tg := newTarget(t, "127.0.0.1")
			e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.AuthToken = token })
			code, body := e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), hdr)
			if code != 407 || !strings.Contains(body, "407") {
				t.Fatalf("CONNECT: %d %s, want 407", code, body)
			}
			code, _ = e.raw(t, fmt.Sprintf("GET http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n%[2]s\r\n", tg.port, hdr))
			if code != 407 {
				t.Fatalf("GET: %d, want 407", code)
			}
			tg.assertUntouched(t)
		})
	}
	t.Run("good token, never forwarded or logged", func(t *testing.T) {
		tg := newTarget(t, "127.0.0.1")
		e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.AuthToken = token })
		if code, body := e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), basic("hobbs", token)); code != 200 {
			t.Fatalf("CONNECT with token: %d %s", code, body)
		}
		code, body := e.raw(t, fmt.Sprintf("GET http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n%[2]s\r\n", tg.port, basic("hobbs", token)))
		if code != 200 {
			t.Fatalf("GET with token: %d %s", code, body)
		}
		e.tunnel(t, fmt.Sprintf("denied.test:%d", tg.port), basic("hobbs", token))
		tg.mu.Lock()
		leaked := len(tg.proxyHdr)
		tg.mu.Unlock()
		if leaked != 0 {
			t.Fatalf("target received Proxy-Authorization")
		}
		e.srv.Shutdown(t.Context())
		audit := readFile(t, e.audit)
		if strings.Contains(audit, token) || strings.Contains(audit, base64.StdEncoding.EncodeToString([]byte("hobbs:"+token))) {
			t.Fatalf("token in audit log:\n%s", audit)
		}
		if !strings.Contains(audit, "egress.deny") || !strings.Contains(audit, "egress.allow") {
			t.Fatalf("audit incomplete:\n%s", audit)
		}
	})
}

// TestWebsocketUpgradeAllowed is the positive control for the upgrade case:
// an Upgrade through the plain-HTTP path to an allowed host works, so the
// denial above is the policy's doing, not a path that never works.
func TestWebsocketUpgradeAllowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want upgrade", 400)
			return
		}
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
		line, _ := brw.ReadString('\n')
		io.WriteString(c, "echo:"+line)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startProxy(t, basePolicy(port), nil)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET http://allowed.test:%d/ws HTTP/1.1\r\nHost: allowed.test:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo:hello\n" {
		t.Fatalf("after upgrade: %q %v", line, err)
	}
}

// TestConnectEarlyData: bytes sent in the same write as the CONNECT request
// reach the target once the tunnel is allowed (and never when denied).
func TestConnectEarlyData(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	for _, host := range []string{"allowed.test", "denied.test"} {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\nGET /early HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", host, tg.port)
		all, _ := io.ReadAll(c)
		c.Close()
		got := string(all)
		if host == "allowed.test" && (!strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, "target ok")) {
			t.Fatalf("early data lost: %q", got)
		}
		if host == "denied.test" {
			if !strings.HasPrefix(got, "HTTP/1.1 403") {
				t.Fatalf("denied: %q", got)
			}
			if tg.requests.Load() != 1 {
				t.Fatalf("target served %d requests", tg.requests.Load())
			}
		}
	}
}
