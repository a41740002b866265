package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

const testValue = "ghp_R3alS3cretValue0123456789abcdefABCD"

// seen is what an upstream test server received.
type seen struct {
	mu   sync.Mutex
	reqs []string // "METHOD URI | Authorization | body"
}

func (s *seen) add(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, fmt.Sprintf("%s %s | %s | %s", r.Method, r.RequestURI, r.Header.Get("Authorization"), b))
	s.mu.Unlock()
}

func (s *seen) last(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatal("upstream received nothing")
	}
	return s.reqs[len(s.reqs)-1]
}

// all is a copy of what the upstream received.
func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

type secretEnv struct {
	*proxyEnv
	bound, other *httptest.Server // TLS: bound is example.com, other is other.test
	plain        *httptest.Server // plain HTTP, as plain.test
	seenBound    *seen
	seenOther    *seen
	seenPlain    *seen
	ph, ph2      string // placeholders of GITHUB_TOKEN (bound to example.com) and OTHER_KEY (bound to plain.test)
	caPool       *x509.CertPool
	boundPort    string
}

func startSecretEnv(t *testing.T, rules string) *secretEnv { return startSecretEnvTB(t, rules, nil) }

// startSecretEnvIn is startSecretEnv with GITHUB_TOKEN's binding putting
// it in the positions in of the requests named (config.yaml in:, requests:).
func startSecretEnvIn(t *testing.T, in []string, requests ...string) *secretEnv {
	return startSecretEnvTB(t, "", func(x *policy.Secret) {
		if x.Name == "GITHUB_TOKEN" {
			x.In, x.Requests = in, requests
		}
	})
}

// startSecretEnvB is startSecretEnv for benchmarks (no operational log).
func startSecretEnvB(b *testing.B) *secretEnv {
	e := startSecretEnvTB(b, "", nil)
	e.srv.opts.Logf = func(string, ...any) {}
	return e
}

func startSecretEnvTB(t testing.TB, rules string, mod func(*policy.Secret)) *secretEnv {
	t.Helper()
	e := &secretEnv{seenBound: &seen{}, seenOther: &seen{}, seenPlain: &seen{}}
	handler := func(s *seen) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.add(r); io.WriteString(w, "upstream-ok") }
	}
	e.bound = httptest.NewTLSServer(handler(e.seenBound)) // certificate for example.com and 127.0.0.1
	e.other = httptest.NewTLSServer(handler(e.seenOther))
	e.plain = httptest.NewServer(handler(e.seenPlain))
	t.Cleanup(func() { e.bound.Close(); e.other.Close(); e.plain.Close() })
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }
	e.boundPort = port(e.bound)
	certPEM, keyPEM, err := policy.NewSessionCA("test")
	if err != nil {
		t.Fatal(err)
	}
	e.ph, _ = policy.NewPlaceholder(testValue)
	e.ph2, _ = policy.NewPlaceholder("other-Secret-Value-0123456789")
	ss := &policy.SessionSecrets{CACert: certPEM, CAKey: keyPEM, Secrets: []*policy.Secret{
		{Binding: policy.Binding{Name: "GITHUB_TOKEN", Hosts: []string{"example.com:" + e.boundPort}}, Placeholder: e.ph, Value: testValue},
		{Binding: policy.Binding{Name: "OTHER_KEY", Hosts: []string{"plain.test:" + port(e.plain)}}, Placeholder: e.ph2, Value: "other-Secret-Value-0123456789"},
	}}
	if mod != nil {
		for _, x := range ss.Secrets {
			mod(x)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(e.bound.Certificate())
	roots.AddCert(e.other.Certificate())
	e.caPool = x509.NewCertPool()
	e.caPool.AppendCertsFromPEM([]byte(certPEM))
	policy := fmt.Sprintf("allow_private: [127.0.0.0/8]\ndomains: [\"example.com:%s\", \"other.test:%s\", \"plain.test:%s\"]\n%s",
		e.boundPort, port(e.other), port(e.plain), rules)
	e.proxyEnv = startProxy(t, policy, func(o *Options) {
		o.Secrets = ss
		o.UpstreamRoots = roots
	})
	return e
}

// clientTrusting is client trusting the session CA and extra roots.
func (e *secretEnv) clientTrusting(extra ...*x509.Certificate) *http.Client {
	c := e.client()
	pool := e.caPool.Clone()
	for _, x := range extra {
		pool.AddCert(x)
	}
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool
	return c
}

// client is an HTTP client through the proxy trusting the session CA only.
func (e *secretEnv) client() *http.Client {
	pu, _ := url.Parse("http://" + e.addr)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: e.caPool},
	}}
}

func do(t *testing.T, c *http.Client, method, u, auth, body, ctype string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecretSubstitution: a binding puts its value in request headers (a
// Basic credential decoded and encoded again); in the path, the query and
// the body only where its in: says, the last two for the requests its
// requests: names.
func TestSecretSubstitution(t *testing.T) {
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	type tcase struct {
		name, method, path, auth, body, ctype, want string
	}
	run := func(t *testing.T, e *secretEnv, cases []tcase) {
		c := e.client()
		base := "https://example.com:" + e.boundPort
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, body := do(t, c, tc.method, base+tc.path, tc.auth, tc.body, tc.ctype)
				if code != 200 || body != "upstream-ok" {
					t.Fatalf("status %d body %q", code, body)
				}
				if got := e.seenBound.last(t); got != tc.want {
					t.Fatalf("upstream got\n  %q\nwant\n  %q", got, tc.want)
				}
			})
		}
		// One line per request (and one for the tunnel they share).
		mustWaitFor(t, 10*time.Second, func() bool { return strings.Count(readFile(t, e.audit), `"secrets":["GITHUB_TOKEN"]`) >= len(cases) })
		log := readFile(t, e.audit)
		if strings.Contains(log, testValue) {
			t.Fatal("the audit log holds the secret's value")
		}
		first, _, _ := strings.Cut(cases[0].path, "?")
		if !strings.Contains(log, `"secrets":["GITHUB_TOKEN"]`) || !strings.Contains(log, `"path":"`+first+`"`) {
			t.Fatalf("audit lines do not name the secret put in or the path:\n%s", log)
		}
	}
	t.Run("headers by default", func(t *testing.T) {
		e := startSecretEnv(t, "")
		run(t, e, []tcase{
			{"bearer header", "GET", "/repos/x", "Bearer " + e.ph, "", "", "GET /repos/x | Bearer " + testValue + " | "},
			{"basic credential", "GET", "/", basic("x-access-token", e.ph), "", "", "GET / | " + basic("x-access-token", testValue) + " | "},
		})
	})
	t.Run("path, query and body where in: says", func(t *testing.T) {
		e := startSecretEnvIn(t, []string{"path", "query", "body"}, "GET /q", "GET /p/", "POST /b", "POST /f")
		enc := "%" + fmt.Sprintf("%02X", e.ph[0]) + e.ph[1:] // first byte percent-encoded
		run(t, e, []tcase{
			{"query", "GET", "/q?token=" + e.ph + "&again=" + e.ph, "", "", "", "GET /q?token=" + testValue + "&again=" + testValue + " |  | "},
			{"percent-encoded placeholder", "GET", "/p/" + enc, "", "", "", "GET /p/" + testValue + " |  | "},
			{"json body", "POST", "/b", "", `{"t":"` + e.ph + `"}`, "application/json", "POST /b |  | {\"t\":\"" + testValue + "\"}"},
			{"form body", "POST", "/f", "", "a=1&t=" + e.ph, "application/x-www-form-urlencoded", "POST /f |  | a=1&t=" + url.QueryEscape(testValue)},
		})
	})
}

// TestSecretPositionRefused: a placeholder in a position its binding does
// not allow, or in a request its requests: do not name, is refused with a
// 403 naming the variable and the position, audited as egress.leak, and
// nothing reaches the host.
func TestSecretPositionRefused(t *testing.T) {
	check := func(t *testing.T, e *secretEnv, method, path, auth, body, ctype, where string) {
		t.Helper()
		before := e.seenBound.count()
		code, got := do(t, e.client(), method, "https://example.com:"+e.boundPort+path, auth, body, ctype)
		if code != 403 || !strings.Contains(got, "placeholder of GITHUB_TOKEN in its "+where) || strings.Contains(got, testValue) {
			t.Errorf("%s %s: status %d %q, want 403 naming GITHUB_TOKEN in its %s", method, path, code, got, where)
		}
		// A body longer than the proxy reads whole is cut where the
		// placeholder appears: its head reaches the host.
		if e.seenBound.count() != before && len(body) <= maxSubstBody {
			t.Errorf("%s %s reached the host", method, path)
		}
	}
	t.Run("default", func(t *testing.T) {
		e := startSecretEnv(t, "")
		check(t, e, "GET", "/q?token="+e.ph, "", "", "", "query")
		check(t, e, "GET", "/p/"+e.ph, "", "", "", "path")
		check(t, e, "POST", "/b", "", `{"t":"`+e.ph+`"}`, "application/json", "body")
		check(t, e, "POST", "/b", "", "data="+url.QueryEscape(e.ph), "application/x-www-form-urlencoded", "body")
		check(t, e, "POST", "/b", "", strings.Repeat("x", maxSubstBody)+e.ph, "text/plain", "body") // streamed
		mustWaitFor(t, 10*time.Second, func() bool { return strings.Count(readFile(t, e.audit), `"event":"egress.leak"`) >= 5 })
		log := readFile(t, e.audit)
		if strings.Count(log, `"event":"egress.leak"`) < 5 || !strings.Contains(log, `"leak":"GITHUB_TOKEN"`) || strings.Contains(log, testValue) {
			t.Errorf("want 5 egress.leak lines naming GITHUB_TOKEN, without its value:\n%s", log)
		}
	})
	t.Run("requests", func(t *testing.T) {
		e := startSecretEnvIn(t, []string{"body"}, "POST /token")
		check(t, e, "POST", "/tokens", "", "secret="+e.ph, "application/x-www-form-urlencoded", "body")
		check(t, e, "PUT", "/token", "", "secret="+e.ph, "application/x-www-form-urlencoded", "body")
		check(t, e, "POST", "/token", "Bearer "+e.ph, "", "", "header") // in: names only the body
		if code, got := do(t, e.client(), "POST", "https://example.com:"+e.boundPort+"/token", "", "secret="+e.ph, "application/x-www-form-urlencoded"); code != 200 {
			t.Fatalf("POST /token: %d %s", code, got)
		}
		if got, want := e.seenBound.last(t), "POST /token |  | secret="+url.QueryEscape(testValue); got != want {
			t.Errorf("upstream got %q, want %q", got, want)
		}
	})
}

func TestSecretLeakRefused(t *testing.T) {
	e := startSecretEnv(t, "")
	c := e.client()
	plainURL := e.plain.URL // http://127.0.0.1:PORT
	_, pport, _ := net.SplitHostPort(e.plain.Listener.Addr().String())
	plainHost := "http://plain.test:" + pport
	cases := []struct {
		name, method, u, auth, body string
		secret                      string
	}{
		{"placeholder to another host, plain HTTP header", "GET", plainHost + "/", "Bearer " + e.ph, "", "GITHUB_TOKEN"},
		{"placeholder in a query", "GET", plainHost + "/?t=" + e.ph, "", "", "GITHUB_TOKEN"},
		{"placeholder percent-encoded", "GET", plainHost + "/?t=%" + fmt.Sprintf("%02x", e.ph[0]) + e.ph[1:], "", "", "GITHUB_TOKEN"},
		{"placeholder in a body", "POST", plainHost + "/", "", "x=" + e.ph, "GITHUB_TOKEN"},
		{"real value in plaintext", "GET", plainHost + "/", "token " + testValue, "", "GITHUB_TOKEN"},
		{"other secret to the intercepted host", "GET", "https://example.com:" + e.boundPort + "/", "Bearer " + e.ph2, "", "OTHER_KEY"},
		{"basic credential to another host", "GET", plainHost + "/", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+e.ph)), "", "GITHUB_TOKEN"},
		// Last: its first 192 KiB do reach the upstream, the placeholder not.
		{"placeholder in a big body", "POST", plainHost + "/", "", strings.Repeat("a", 3*maxSubstBody) + e.ph + "tail", "GITHUB_TOKEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.seenPlain.count() + e.seenBound.count()
			code, body := do(t, c, tc.method, tc.u, tc.auth, tc.body, "")
			if code != 403 {
				t.Fatalf("status %d, want 403; body %q", code, body)
			}
			if !strings.Contains(body, tc.secret) || strings.Contains(body, testValue) || strings.Contains(body, e.ph) {
				t.Fatalf("refusal should name %s and hold neither value nor placeholder: %q", tc.secret, body)
			}
			if n := e.seenPlain.count() + e.seenBound.count(); n != before && !strings.Contains(tc.name, "big body") {
				t.Fatal("the request reached the upstream")
			}
		})
	}
	_ = plainURL
	// The placeholder goes to its own host; a plain-HTTP binding works too.
	if code, _ := do(t, c, "GET", plainHost+"/", "Bearer "+e.ph2, "", ""); code != 200 {
		t.Fatalf("bound plain-HTTP request: %d", code)
	}
	// The plain upstream records a request once it has read its body: the
	// big body refused above is recorded when the proxy cuts it off, which
	// can be after the request just made. Closing the upstream waits for
	// both; then what it received is complete, in whatever order.
	e.plain.Close()
	reqs := e.seenPlain.all()
	for _, r := range reqs {
		if strings.Contains(r, e.ph) || strings.Contains(r, testValue) {
			t.Fatalf("the plain upstream received a placeholder or the value: %.200q", r)
		}
	}
	if !slices.ContainsFunc(reqs, func(r string) bool { return strings.Contains(r, "Bearer other-Secret-Value-0123456789") }) {
		t.Fatalf("plain-HTTP upstream got %.200q", reqs)
	}
	mustWaitFor(t, 10*time.Second, func() bool { return strings.Count(readFile(t, e.audit), `"event":"egress.leak"`) >= len(cases) })
	log := readFile(t, e.audit)
	if strings.Count(log, `"event":"egress.leak"`) < len(cases) || strings.Contains(log, testValue) {
		t.Fatalf("want %d egress.leak lines and no value:\n%s", len(cases), log)
	}
}

func TestInterceptOnlyBoundHosts(t *testing.T) {
	e := startSecretEnv(t, "")
	_, oport, _ := net.SplitHostPort(e.other.Listener.Addr().String())
	// other.test is not bound: an opaque tunnel, where the agent sees the
	// host's own certificate (the session CA does not verify it).
	code, body := do(t, e.client(), "GET", "https://other.test:"+oport+"/", "", "", "")
	if code != 0 || !strings.Contains(body, "certificate") {
		t.Fatalf("unbound host: want a certificate error with the session CA, got %d %q", code, body)
	}
	conn := dialTunnel(t, e.addr, "other.test:"+oport)
	tc := tls.Client(conn, &tls.Config{ServerName: "example.com", RootCAs: poolOf(e.other.Certificate())})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("unbound host is not an opaque tunnel: %v", err)
	}
	tc.Close()
	// The bound host's certificate is the session CA's, for that host.
	conn = dialTunnel(t, e.addr, "example.com:"+e.boundPort)
	tc = tls.Client(conn, &tls.Config{ServerName: "example.com", RootCAs: e.caPool})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("bound host: %v", err)
	}
	// Inside, a request naming another host is refused, never forwarded.
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: evil.test\r\nAuthorization: Bearer %s\r\n\r\n", e.ph)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || e.seenBound.count() != 0 {
		t.Fatalf("Host mismatch inside an intercepted tunnel: %d, upstream saw %d", resp.StatusCode, e.seenBound.count())
	}
	tc.Close()
}

func TestInterceptVerifiesUpstream(t *testing.T) {
	e := startSecretEnv(t, "")
	// The proxy trusts only the test roots; with the system roots the test
	// server's certificate is refused, and the agent gets a 502.
	e.srv.opts.UpstreamRoots = x509.NewCertPool()
	e.srv.newForwarder() // no request has been forwarded yet
	code, body := do(t, e.client(), "GET", "https://example.com:"+e.boundPort+"/", "Bearer "+e.ph, "", "")
	if code != 502 || e.seenBound.count() != 0 {
		t.Fatalf("unverified upstream: %d %q (upstream saw %d)", code, body, e.seenBound.count())
	}
}

func TestRequestRules(t *testing.T) {
	_, plainPort := "", ""
	e := startSecretEnv(t, "")
	_, plainPort, _ = net.SplitHostPort(e.plain.Listener.Addr().String())
	_, otherPort, _ := net.SplitHostPort(e.other.Listener.Addr().String())
	rules := fmt.Sprintf("rules:\n  example.com:%s:\n    - allow GET,POST /repos/\n    - deny DELETE\n  plain.test:%s:\n    - deny DELETE\n  other.test:%s:\n    - deny POST\n",
		e.boundPort, plainPort, otherPort)
	if err := writeFile(e.policy, readFile(t, e.policy)+rules); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	base := "https://example.com:" + e.boundPort
	for _, tc := range []struct {
		method, u string
		want      int
		rule      string
	}{
		{"GET", base + "/repos/a", 200, "allow GET,POST /repos/"},
		{"POST", base + "/repos/a", 200, "allow GET,POST /repos/"},
		{"DELETE", base + "/repos/a", 403, "deny DELETE"},
		{"GET", base + "/admin", 403, "no rule allows GET /admin"},
		{"GET", base + "/repos/%2e%2e/admin", 403, "ambiguous path"},
		{"GET", base + "/repos%2Fx", 403, "ambiguous path"},
		{"DELETE", "http://plain.test:" + plainPort + "/x", 403, "deny DELETE"},
		{"GET", "http://plain.test:" + plainPort + "/x", 200, "no rule matches"},
		// A host with rules but no secret is intercepted too.
		{"POST", "https://other.test:" + otherPort + "/", 403, "deny POST"},
	} {
		code, body := do(t, c, tc.method, tc.u, "", "", "")
		if code != tc.want {
			t.Fatalf("%s %s: %d, want %d (%q)", tc.method, tc.u, code, tc.want, body)
		}
		if tc.want == 403 && !strings.Contains(body, tc.rule) {
			t.Fatalf("%s %s: the refusal does not name the rule %q: %q", tc.method, tc.u, tc.rule, body)
		}
		if tc.rule != "" && !strings.Contains(readFile(t, e.audit), tc.rule) {
			mustWaitFor(t, 10*time.Second, func() bool { return strings.Contains(readFile(t, e.audit), tc.rule) })
			if !strings.Contains(readFile(t, e.audit), tc.rule) {
				t.Fatalf("the audit log does not name the rule %q", tc.rule)
			}
		}
	}
}

func TestRulesNeedInterception(t *testing.T) {
	tg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tg.Close()
	_, port, _ := net.SplitHostPort(tg.Listener.Addr().String())
	e := startProxy(t, fmt.Sprintf("allow_private: [127.0.0.0/8]\ndomains: [\"a.test:%s\"]\nrules:\n  a.test:%s: [\"deny DELETE\"]\n", port, port), nil)
	code, body := e.tunnel(t, "a.test:"+port, "")
	if code != 403 || !strings.Contains(body, "interception-unavailable") {
		t.Fatalf("a CONNECT the proxy cannot apply rules to: %d %q", code, body)
	}
}

func TestSessionCA(t *testing.T) {
	certPEM, keyPEM, err := policy.NewSessionCA("s1")
	if err != nil {
		t.Fatal(err)
	}
	li, err := newLeafIssuer(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := li.certFor("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(leaf.Certificate[0])
	if _, err := c.Verify(x509.VerifyOptions{DNSName: "api.example.com", Roots: poolOf(li.ca)}); err != nil {
		t.Fatalf("leaf does not verify: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{DNSName: "evil.example.com", Roots: poolOf(li.ca)}); err == nil {
		t.Fatal("a leaf for one host verifies for another")
	}
	other, otherKey, _ := policy.NewSessionCA("s2")
	if _, err := newLeafIssuer(certPEM, otherKey); err == nil {
		t.Fatal("a key that is not the CA's was accepted")
	}
	_ = other
	if b, _ := pem.Decode([]byte(certPEM)); b == nil || strings.Contains(certPEM, "PRIVATE") {
		t.Fatal("the certificate PEM is wrong")
	}
}

func poolOf(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

func TestInterceptShutdown(t *testing.T) {
	e := startSecretEnv(t, "")
	// A kept-alive intercepted connection, idle between two requests, does
	// not hold Shutdown up.
	if code, _ := do(t, e.client(), "GET", "https://example.com:"+e.boundPort+"/", "Bearer "+e.ph, "", ""); code != 200 {
		t.Fatalf("status %d", code)
	}
	// Held up, Shutdown would wait for its context to end; the deadline
	// is only a safety net, what counts is that it was not needed.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
	if ctx.Err() != nil || e.srv.ActiveTunnels() != 0 {
		t.Fatalf("Shutdown took %v (until its deadline) with %d tunnels left", time.Since(start), e.srv.ActiveTunnels())
	}
}

// TestSecretInPath: a Telegram bot token (in: [path]) goes into the path
// of https://api.telegram.org/bot<token>/METHOD with its ":" as written,
// and only there.
func TestSecretInPath(t *testing.T) {
	const token = "123456789:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	ph, err := policy.NewPlaceholder(token)
	if err != nil || !regexp.MustCompile(`^[0-9]{9}:[A-Za-z0-9_-]{34}$`).MatchString(ph) {
		t.Fatalf("placeholder %q (%v): not a bot token's shape", ph, err)
	}
	e := startSecretEnvTB(t, "", func(x *policy.Secret) {
		if x.Name == "GITHUB_TOKEN" {
			x.Value, x.Placeholder, x.In = token, ph, []string{"path"}
		}
	})
	c := e.client()
	base := "https://example.com:" + e.boundPort
	if code, body := do(t, c, "POST", base+"/bot"+ph+"/sendMessage", "", `{"chat_id":1,"text":"hi"}`, "application/json"); code != 200 {
		t.Fatalf("status %d %q", code, body)
	}
	if got, want := e.seenBound.last(t), "POST /bot"+token+"/sendMessage |  | {\"chat_id\":1,\"text\":\"hi\"}"; got != want {
		t.Fatalf("upstream got %q, want %q", got, want)
	}
	for _, tc := range []struct{ path, auth string }{{"/x?token=" + ph, ""}, {"/x", "Bearer " + ph}} {
		if code, body := do(t, c, "GET", base+tc.path, tc.auth, "", ""); code != 403 || !strings.Contains(body, "GITHUB_TOKEN") {
			t.Errorf("%s %s: %d %q, want a 403 naming GITHUB_TOKEN", tc.path, tc.auth, code, body)
		}
	}
}
