package egress

// Attacks on secrets bound to hosts and on request rules, by a hostile
// agent, one test each; every one must be stopped. Each comment says what
// the attack tries.

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// fullSeen records what an upstream received, trailers included: a body's
// first maxSeenBody bytes. An upstream that read a body whole would buffer
// an endless one in this test process, whose heap the leak tests measure.
type fullSeen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *fullSeen) handler(reply func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, maxSeenBody))
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s %s HOST=%s\n", r.Method, r.RequestURI, r.Host)
		r.Header.Write(&sb)
		sb.WriteString("BODY=")
		sb.Write(b)
		sb.WriteString("\nTRAILER=")
		r.Trailer.Write(&sb)
		s.mu.Lock()
		s.reqs = append(s.reqs, sb.String())
		s.mu.Unlock()
		if reply != nil {
			reply(w, r, b)
			return
		}
		io.WriteString(w, "upstream-ok")
	}
}

// maxSeenBody is how much of a request body a fake upstream reads.
const maxSeenBody = 1 << 20

func (s *fullSeen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n----\n")
}

func (s *fullSeen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// attackEnv is startSecretEnv with recording upstreams; reply (optional)
// answers for the bound host.
func attackEnv(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, body []byte)) (*secretEnv, *fullSeen, *fullSeen) {
	t.Helper()
	e := startSecretEnv(t, "")
	fb, fp := &fullSeen{}, &fullSeen{}
	// No request has reached the upstreams yet: swapping handlers is safe.
	e.bound.Config.Handler = fb.handler(reply)
	e.plain.Config.Handler = fp.handler(nil)
	return e, fb, fp
}

func (e *secretEnv) plainPort() string {
	_, p, _ := net.SplitHostPort(e.plain.Listener.Addr().String())
	return p
}

func (e *secretEnv) otherPort() string {
	_, p, _ := net.SplitHostPort(e.other.Listener.Addr().String())
	return p
}

// addRules appends request rules to the policy and reloads it.
func (e *secretEnv) addRules(t *testing.T, rules string) {
	t.Helper()
	if err := writeFile(e.policy, readFile(t, e.policy)+rules); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
}

// interceptConn opens an intercepted TLS connection to example.com.
func (e *secretEnv) interceptConn(t *testing.T) *tls.Conn {
	t.Helper()
	conn := dialTunnel(t, e.addr, "example.com:"+e.boundPort)
	tc := tls.Client(conn, &tls.Config{ServerName: "example.com", RootCAs: e.caPool, NextProtos: []string{"h2", "http/1.1"}})
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("intercepted handshake: %v", err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc
}

// raw sends raw bytes inside an intercepted tunnel and reads one response.
func (e *secretEnv) raw(t *testing.T, req string) (*http.Response, string) {
	t.Helper()
	tc := e.interceptConn(t)
	if _, err := io.WriteString(tc, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Whatever else the proxy sends on this connection (a second response
	// to a smuggled request) is appended.
	tc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	rest, _ := io.ReadAll(br)
	return resp, string(b) + string(rest)
}

func noFollow(c *http.Client) *http.Client {
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// respAll is a response's status line, headers and body as text.
func respAll(t *testing.T, c *http.Client, method, u string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var sb strings.Builder
	resp.Header.Write(&sb)
	b, _ := io.ReadAll(resp.Body)
	sb.Write(b)
	return resp.StatusCode, sb.String()
}

// ---------------------------------------------------------------------------
// (1) The value reaching the agent.

// ATTACK: the agent writes the placeholder into data the bound host keeps and
// hands back (a gist, an issue body, a profile field, a JSON API that echoes
// its input, an error page quoting the request).
func TestAttackSecretReflectedInResponse(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch r.URL.Path {
		case "/store": // stored data read back (a gist)
			w.Write(body)
		case "/echo-header": // a debugging endpoint, an error page quoting the request
			w.Header().Set("Set-Cookie", "session="+r.Header.Get("X-Api-Key"))
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", token="`+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"`)
			io.WriteString(w, "ok")
		default:
			io.WriteString(w, "ok")
		}
	}
	e, _, _ := attackEnv(t, echo)
	c := noFollow(e.client())
	base := "https://example.com:" + e.boundPort
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      map[string]string
	}{
		{"json body stored and read back", "POST", "/store", `{"files":{"a.txt":{"content":"` + e.ph + `"}}}`, map[string]string{"Content-Type": "application/json"}},
		{"header echoed in Set-Cookie and WWW-Authenticate", "GET", "/echo-header", "", map[string]string{"X-Api-Key": e.ph, "Authorization": "Bearer " + e.ph}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := respAll(t, c, tc.method, base+tc.path, tc.hdr, tc.body)
			if strings.Contains(got, testValue) {
				t.Errorf("status %d: the agent read the real value of GITHUB_TOKEN back from the bound host: %.300q", code, got)
			}
		})
	}
}

// ATTACK: an ordinary redirect of a bound host quotes the substituted query
// in its Location.
func TestAttackSecretRedirectLocation(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/dir/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dir") })
	e.bound.Config.Handler = mux
	c := noFollow(e.client())
	code, got := respAll(t, c, "GET", "https://example.com:"+e.boundPort+"/dir?access_token="+e.ph, nil, "")
	if strings.Contains(got, testValue) || strings.Contains(got, url.QueryEscape(testValue)) {
		t.Fatalf("status %d: the redirect's Location carries the real value back to the agent: %.300q", code, got)
	}
}

// ATTACK: the refusal a leak gets, and a 502 from an intercepted host, hold
// neither the value nor the placeholder.
func TestAttackSecretRefusalBodies(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	c := e.client()
	// The value itself (as if reflected earlier) to the unbound plain host.
	code, body := do(t, c, "GET", "http://plain.test:"+e.plainPort()+"/x?v="+testValue, "", "", "")
	if code != 403 || strings.Contains(body, testValue) || strings.Contains(body, e.ph) {
		t.Fatalf("leak refusal: %d %q", code, body)
	}
	// A placeholder in a method-like place: the refusal names the method.
	code, body = do(t, c, "POST", "http://plain.test:"+e.plainPort()+"/", "Bearer "+e.ph, "", "")
	if code != 403 || strings.Contains(body, e.ph) {
		t.Fatalf("leak refusal: %d %q", code, body)
	}
	// 502 from the bound host: the upstream is gone after substitution.
	e.bound.Close()
	code, body = do(t, c, "GET", "https://example.com:"+e.boundPort+"/?t="+e.ph, "Bearer "+e.ph, "", "")
	if strings.Contains(body, testValue) {
		t.Fatalf("502 body holds the value: %d %q", code, body)
	}
}

// ATTACK: the audit log is to hold placeholders and secret names, never a
// value.
func TestAttackSecretAuditHoldsValue(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	const other = "other-Secret-Value-0123456789"
	code, _ := do(t, e.client(), "GET", "https://example.com:"+e.boundPort+"/x/"+other, "", "", "")
	if code != 403 {
		t.Fatalf("value to an unbound host: %d", code)
	}
	mustWaitFor(t, 10*time.Second, func() bool { return strings.Contains(readFile(t, e.audit), "egress.leak") })
	if log := readFile(t, e.audit); strings.Contains(log, other) {
		t.Fatalf("the audit log holds OTHER_KEY's value:\n%s", log)
	}
}

// ATTACK: a binding written as a bare name ("api.github.com") used over
// plain HTTP on port 443, where the value would travel in cleartext.
func TestAttackSecretCleartextToBoundName(t *testing.T) {
	e := startSecretEnv(t, "")
	s := &policy.Secret{Binding: policy.Binding{Name: "GITHUB_TOKEN", Hosts: []string{"example.com"}}, Placeholder: e.ph, Value: testValue}
	ss := &policy.SessionSecrets{CACert: e.srv.opts.Secrets.CACert, CAKey: e.srv.opts.Secrets.CAKey, Secrets: []*policy.Secret{s}}
	if err := ss.Prepare(); err != nil {
		t.Fatal(err)
	}
	e.srv.opts.Secrets = ss
	if err := writeFile(e.policy, strings.Replace(readFile(t, e.policy), "domains: [", "domains: [example.com, ", 1)); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{443, 80} {
		r, _ := http.NewRequest("GET", fmt.Sprintf("http://example.com:%d/", port), nil)
		r.Header.Set("Authorization", "Bearer "+e.ph)
		rec := &record{host: "example.com", port: port}
		tg := policy.Target{Host: "example.com", Port: port}
		ex := e.srv.explain(e.srv.Policy(), tg)
		if !ex.Allow {
			t.Fatalf("plain HTTP to example.com:%d: %s", port, ex.Rule)
		}
		if code := e.srv.inspect(r, rec, tg, &ex); code == 0 && strings.Contains(r.Header.Get("Authorization"), testValue) {
			if port == 80 { // documented ("443, and 80 for plain HTTP"), still cleartext
				t.Logf("note: plain HTTP to example.com:80 gets the value in cleartext (documented)")
				continue
			}
			t.Errorf("plain HTTP to example.com:%d gets the value in cleartext", port)
		}
	}
}

// ---------------------------------------------------------------------------
// (2) Request rules.

// ATTACK: paths that rules read one way and common servers another.
func TestAttackSecretRulesPathTricks(t *testing.T) {
	check := func(t *testing.T, rules string, paths []string) {
		e, fb, _ := attackEnv(t, nil)
		e.addRules(t, fmt.Sprintf("rules:\n  example.com:%s:\n%s", e.boundPort, rules))
		c := e.client()
		base := "https://example.com:" + e.boundPort
		// Sanity: the rules work on plain spellings.
		if code, _ := do(t, c, "GET", base+"/admin", "", "", ""); code != 403 {
			t.Fatalf("/admin: %d", code)
		}
		for _, p := range paths {
			before := fb.count()
			code, _ := do(t, c, "GET", base+p, "", "", "")
			if code != 403 || fb.count() != before {
				t.Errorf("GET %s passed the rules (status %d): a server that strips ;params or merges // serves /admin", p, code)
			}
		}
	}
	t.Run("allow list", func(t *testing.T) {
		check(t, "    - allow GET,POST /repos/\n", []string{
			"/repos/..;/admin",
			"/repos/%2e%2e;/admin",
			"/repos/../admin",     // stopped
			"/repos/%2e%2e/admin", // stopped
			"/repos/%2fadmin",     // stopped
		})
	})
	t.Run("deny list", func(t *testing.T) {
		check(t, "    - deny GET /admin\n", []string{
			"/admin;x",
			"//admin",
			"/%61dmin", // stopped
		})
	})
}

// ATTACK: methods a server may read as a denied one: lower case, or an
// override header.
func TestAttackSecretRulesMethodTricks(t *testing.T) {
	e, fb, _ := attackEnv(t, nil)
	e.addRules(t, fmt.Sprintf("rules:\n  example.com:%s:\n    - deny DELETE\n", e.boundPort))
	c := e.client()
	u := "https://example.com:" + e.boundPort + "/repos/x"
	if code, _ := do(t, c, "DELETE", u, "", "", ""); code != 403 {
		t.Fatalf("DELETE: %d", code)
	}
	before := fb.count()
	if code, _ := do(t, c, "delete", u, "", "", ""); code != 403 || fb.count() != before {
		t.Errorf("method \"delete\" passed \"deny DELETE\" (status %d)", code)
	}
	before = fb.count()
	code, _ := respAll(t, c, "POST", u, map[string]string{"X-HTTP-Method-Override": "DELETE"}, "")
	if code != 403 || fb.count() != before {
		t.Errorf("POST with X-HTTP-Method-Override: DELETE passed \"deny DELETE\" (status %d)", code)
	}
}

// ---------------------------------------------------------------------------
// (3) Steering an intercepted request elsewhere, smuggling.

// ATTACK: inside an intercepted tunnel, requests naming another host
// (absolute-form, CONNECT, Host with another port), HTTP/2, and a TE+CL body
// hiding a second request are refused or re-framed; the upstream never sees a
// request for another host or an unframed one.
func TestAttackSecretInsideTunnel(t *testing.T) {
	e, fb, _ := attackEnv(t, nil)
	e.addRules(t, fmt.Sprintf("rules:\n  example.com:%s:\n    - deny GET /admin\n", e.boundPort))
	hp := "example.com:" + e.boundPort
	for _, tc := range []struct{ name, req string }{
		{"absolute-form other host", "GET https://other.test:" + e.otherPort() + "/ HTTP/1.1\r\nHost: example.com:" + e.boundPort + "\r\nAuthorization: Bearer " + e.ph + "\r\n\r\n"},
		{"absolute-form http other host", "GET http://plain.test:" + e.plainPort() + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"},
		{"CONNECT inside", "CONNECT other.test:" + e.otherPort() + " HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"},
		{"Host without port", "GET / HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer " + e.ph + "\r\n\r\n"},
		{"two Host headers", "GET / HTTP/1.1\r\nHost: " + hp + "\r\nHost: evil.test\r\n\r\n"},
		{"Host with userinfo", "GET / HTTP/1.1\r\nHost: evil.test@" + hp + "\r\n\r\n"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"Upgrade h2c", "GET / HTTP/1.1\r\nHost: " + hp + "\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fb.count()
			resp, body := e.raw(t, tc.req)
			if resp != nil && resp.StatusCode == 200 || fb.count() != before {
				t.Fatalf("forwarded: %v %q\nupstream saw: %s", resp, body, fb.all())
			}
		})
	}
	// HTTP/1.0 without Host: skips the Host check, still goes to the
	// CONNECT's host, named as such.
	before := fb.count()
	e.raw(t, "GET /h10 HTTP/1.0\r\n\r\n")
	if fb.count() != before+1 || !strings.Contains(fb.all(), "GET /h10 HOST="+hp) {
		t.Fatalf("HTTP/1.0 without Host: upstream saw:\n%s", fb.all())
	}
	// TE+CL: the proxy re-frames; a request hidden in the body must never
	// reach the upstream as a request (the denied /admin).
	smuggled := "GET /admin HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"
	chunk := fmt.Sprintf("0\r\n\r\n%s", smuggled)
	for _, tc := range []struct{ name, req string }{
		{"TE and CL", fmt.Sprintf("POST /x HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", hp, len(chunk), chunk)},
		{"TE obfuscated", fmt.Sprintf("POST /x HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n%s", hp, smuggled)},
		{"folded TE", fmt.Sprintf("POST /x HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n%s", hp, smuggled)},
		{"two CL", fmt.Sprintf("POST /x HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n%s", hp, smuggled)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.raw(t, tc.req)
			if strings.Contains(fb.all(), "GET /admin") {
				t.Fatalf("a request the rules deny reached the upstream by smuggling:\n%s", fb.all())
			}
		})
	}
}

// ---------------------------------------------------------------------------
// (6) Leak detection.

// ATTACK: a percent-encoded placeholder after the first 64 KiB of a body,
// where the body is scanned as it streams.
func TestAttackSecretBigBodyEncoded(t *testing.T) {
	e, _, fp := attackEnv(t, nil)
	enc := ""
	for i := 0; i < len(e.ph); i++ {
		enc += fmt.Sprintf("%%%02X", e.ph[i])
	}
	body := "a=" + strings.Repeat("b", 2*maxSubstBody) + "&t=" + enc
	code, _ := do(t, e.client(), "POST", "http://plain.test:"+e.plainPort()+"/", "", body, "application/x-www-form-urlencoded")
	if strings.Contains(fp.all(), enc) {
		t.Fatalf("status %d: a percent-encoded GITHUB_TOKEN placeholder past 64 KiB reached plain.test", code)
	}
	// The same below 64 KiB is found (stopped).
	if code, _ := do(t, e.client(), "POST", "http://plain.test:"+e.plainPort()+"/", "", "t="+enc, "application/x-www-form-urlencoded"); code != 403 {
		t.Fatalf("small encoded body: %d", code)
	}
}

// ATTACK: a placeholder in a request trailer.
func TestAttackSecretTrailer(t *testing.T) {
	e, fb, fp := attackEnv(t, nil)
	send := func(t *testing.T, u, ph string) int {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(strings.Repeat("z", 2*maxSubstBody)))
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", u, pr)
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Token": {"Bearer " + ph}}
		resp, err := e.client().Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("plain HTTP", func(t *testing.T) {
		code := send(t, "http://plain.test:"+e.plainPort()+"/", e.ph)
		if strings.Contains(fp.all(), e.ph) {
			t.Fatalf("status %d: the GITHUB_TOKEN placeholder reached plain.test in a trailer", code)
		}
	})
	t.Run("intercepted", func(t *testing.T) {
		code := send(t, "https://example.com:"+e.boundPort+"/", e.ph2)
		if strings.Contains(fb.all(), e.ph2) {
			t.Fatalf("status %d: the OTHER_KEY placeholder reached example.com in a trailer", code)
		}
	})
}

// ATTACK: a placeholder in a Basic credential without base64 padding.
func TestAttackSecretBasicUnpadded(t *testing.T) {
	e, _, fp := attackEnv(t, nil)
	var cred string
	for _, user := range []string{"u", "us", "usr"} {
		c := base64.StdEncoding.EncodeToString([]byte(user + ":" + e.ph))
		if strings.HasSuffix(c, "=") {
			cred = strings.TrimRight(c, "=")
			break
		}
	}
	code, _ := do(t, e.client(), "GET", "http://plain.test:"+e.plainPort()+"/", "Basic "+cred, "", "")
	if code != 403 || strings.Contains(fp.all(), cred) {
		t.Fatalf("status %d: an unpadded Basic credential carrying the placeholder reached plain.test", code)
	}
}

// ATTACK: a placeholder split across chunks of a chunked body (small: read
// whole) and across reads of a big one is still found.
func TestAttackSecretSplitAcrossChunks(t *testing.T) {
	e, _, fp := attackEnv(t, nil)
	for _, pad := range []int{10, 3 * maxSubstBody} {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(strings.Repeat("q", pad) + e.ph[:7]))
			time.Sleep(20 * time.Millisecond)
			pw.Write([]byte(e.ph[7:] + "tail"))
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", "http://plain.test:"+e.plainPort()+"/", pr)
		req.ContentLength = -1
		resp, err := e.client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if strings.Contains(fp.all(), e.ph) {
			t.Fatalf("pad %d: a split placeholder reached plain.test", pad)
		}
	}
}

// ---------------------------------------------------------------------------
// (4)(5) Crashing, wedging, exhausting.

// ATTACK: a wildcard binding intercepts every name under it; asking for
// many names must not grow the leaf certificate cache without bound.
func TestAttackSecretLeafCacheUnbounded(t *testing.T) {
	e := startSecretEnv(t, "")
	ss := e.srv.opts.Secrets
	ss.Secrets = append(ss.Secrets, &policy.Secret{Binding: policy.Binding{Name: "WILD", Hosts: []string{"*.wild.test:" + e.boundPort}}, Placeholder: "hobbs_ph_wildwildwildwildwild0123", Value: "wild-value-0123456789"})
	if err := ss.Prepare(); err != nil {
		t.Fatal(err)
	}
	e.addRules(t, "") // keep the policy as is
	if err := writeFile(e.policy, strings.Replace(readFile(t, e.policy), "domains: [", fmt.Sprintf("domains: [\"*.wild.test:%s\", ", e.boundPort), 1)); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	const n = 600
	for i := 0; i < n; i++ {
		c := dialTunnel(t, e.addr, fmt.Sprintf("h%d.wild.test:%s", i, e.boundPort))
		c.Close()
	}
	// Every certificate is issued once the tunnels have ended.
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("%d tunnels left", e.srv.ActiveTunnels())
	}
	e.srv.issuer.mu.Lock()
	got := len(e.srv.issuer.certs)
	e.srv.issuer.mu.Unlock()
	if got >= n {
		t.Fatalf("the leaf certificate cache holds %d entries after %d distinct intercepted names: unbounded", got, n)
	}
}

// ATTACK: intercepted connections that never handshake, never finish a
// request head, or send an endless chunked body to a bound host do not leave
// goroutines behind once the client goes, and an endless body is not buffered
// without bound.
func TestAttackSecretInterceptLeaks(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	e.srv.opts.HeaderTimeout = 300 * time.Millisecond // applies to new intercepted tunnels
	base := runtime.NumGoroutine()
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		conns = append(conns, dialTunnel(t, e.addr, "example.com:"+e.boundPort)) // no handshake
	}
	for i := 0; i < 20; i++ { // handshake, half a head
		tc := e.interceptConn(t)
		io.WriteString(tc, "GET / HTTP/1.1\r\nHost: ")
		conns = append(conns, tc)
	}
	// Endless chunked body with -1 length to the bound host.
	tc := e.interceptConn(t)
	fmt.Fprintf(tc, "POST / HTTP/1.1\r\nHost: example.com:%s\r\nTransfer-Encoding: chunked\r\n\r\n", e.boundPort)
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	chunk := strings.Repeat("x", 1<<16)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		tc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := fmt.Fprintf(tc, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
			break
		}
	}
	// The live heap, while the connection is still open: what the proxy
	// holds of the body, not garbage a collection has not reached yet.
	runtime.GC()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if ms1.HeapInuse > ms0.HeapInuse+64<<20 {
		t.Fatalf("an endless body grew the heap by %d MiB", (ms1.HeapInuse-ms0.HeapInuse)>>20)
	}
	tc.Close()
	for _, c := range conns {
		c.Close()
	}
	if !waitFor(20*time.Second, func() bool { return runtime.NumGoroutine() <= base+10 }) {
		t.Fatalf("goroutines: %d before, %d after the clients left", base, runtime.NumGoroutine())
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("%d tunnels left", e.srv.ActiveTunnels())
	}
}

// ATTACK: a placeholder sent as the request method.
func TestAttackSecretMethodCarriesPlaceholder(t *testing.T) {
	e, fb, fp := attackEnv(t, nil)
	c := e.client()
	code, _ := do(t, c, e.ph, "http://plain.test:"+e.plainPort()+"/", "", "", "")
	if strings.Contains(fp.all(), e.ph) {
		t.Errorf("status %d: the GITHUB_TOKEN placeholder reached plain.test as the request method", code)
	}
	code, _ = do(t, c, testValue, "http://plain.test:"+e.plainPort()+"/", "", "", "")
	if strings.Contains(fp.all(), testValue) {
		t.Errorf("status %d: GITHUB_TOKEN's value reached plain.test as the request method", code)
	}
	code, _ = do(t, c, e.ph2, "https://example.com:"+e.boundPort+"/", "", "", "")
	if strings.Contains(fb.all(), e.ph2) {
		t.Errorf("status %d: the OTHER_KEY placeholder reached example.com as the request method", code)
	}
}

// ATTACK: a placeholder in the CONNECT (or plain-HTTP URL) host name under
// an allowed wildcard, which DNS would carry out.
func TestAttackSecretHostNameCarriesPlaceholder(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	if err := writeFile(e.policy, strings.Replace(readFile(t, e.policy), "domains: [", fmt.Sprintf("domains: [\"*.wild.test:%s\", ", e.otherPort()), 1)); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	host := strings.ToLower(e.ph2) + ".wild.test:" + e.otherPort()
	code, body := e.tunnel(t, host, "")
	if code == 200 {
		t.Fatalf("CONNECT %s: %d %q — OTHER_KEY's placeholder went out as a DNS name", host, code, body)
	}
}

// ATTACK: Expect: 100-continue does not get a body past leak detection (the
// proxy reads it before deciding), and a leak refused behind it reaches no
// upstream.
func TestAttackSecretExpectContinue(t *testing.T) {
	e, fb, _ := attackEnv(t, nil)
	body := "x=" + e.ph2
	resp, _ := e.raw(t, fmt.Sprintf("POST / HTTP/1.1\r\nHost: example.com:%s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n%s", e.boundPort, len(body), body))
	if resp == nil || resp.StatusCode == 200 || fb.count() != 0 {
		t.Fatalf("Expect: 100-continue with OTHER_KEY's placeholder: %v, upstream saw %d", resp, fb.count())
	}
}

// ATTACK: a plain-HTTP websocket (ws://) to an allowed host, whose frames
// would carry a placeholder past the proxy's scans.
func TestAttackSecretWebsocketUnscanned(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	got := make(chan string, 1)
	e.plain.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 4096)
		n, _ := io.ReadAtLeast(brw, b, 10)
		got <- string(b[:n])
	})
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	hp := "plain.test:" + e.plainPort()
	fmt.Fprintf(c, "GET http://%s/ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", hp, hp)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		return // refused: the upgraded connection would carry bytes the proxy does not read
	}
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	frame := append([]byte{0x81, 0x80 | byte(len(e.ph)), 0, 0, 0, 0}, e.ph...) // text frame, zero mask
	c.Write(frame)
	select {
	case s := <-got:
		if strings.Contains(s, e.ph) {
			t.Fatalf("GITHUB_TOKEN's placeholder reached plain.test inside a websocket frame")
		}
	case <-time.After(3 * time.Second):
	}
}

// ATTACK: a bound host that answers with a malformed status line quoting
// the request's Authorization header, where the binding put the value, which
// the proxy's own 502 would quote back to the agent.
func TestAttackSecret502ReflectsValue(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	e.bound.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		// A status line whose code is the value: Go's transport quotes it
		// in its error ("malformed HTTP status code ...").
		fmt.Fprintf(c, "HTTP/1.1 %s OK\r\n\r\n", strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		c.Close()
	})
	code, body := do(t, e.client(), "GET", "https://example.com:"+e.boundPort+"/", "Bearer "+e.ph, "", "")
	if code != http.StatusBadGateway {
		t.Fatalf("intercepted: status %d, want the proxy's 502 for a malformed answer: %q", code, body)
	}
	if strings.Contains(body, testValue) {
		t.Errorf("the proxy's 502 carries GITHUB_TOKEN's value to the agent: %q", body)
	}
	// The plain path, with OTHER_KEY (a value no redaction pattern knows):
	// the agent's 502 and the audit line.
	const other = "other-Secret-Value-0123456789"
	e.plain.Config.Handler = e.bound.Config.Handler
	code, body = do(t, e.client(), "GET", "http://plain.test:"+e.plainPort()+"/", "Bearer "+e.ph2, "", "")
	if code != http.StatusBadGateway {
		t.Fatalf("plain HTTP: status %d, want the proxy's 502 for a malformed answer: %q", code, body)
	}
	if strings.Contains(body, other) {
		t.Errorf("plain HTTP: the proxy's 502 carries OTHER_KEY's value to the agent: %q", body)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Count(readFile(t, e.audit), "malformed") >= 2 }) {
		t.Fatalf("want two audit lines for the malformed answers:\n%s", readFile(t, e.audit))
	}
	if log := readFile(t, e.audit); strings.Contains(log, testValue) || strings.Contains(log, other) {
		t.Errorf("the audit log holds a value (from the upstream error):\n%s", log)
	}
}

// ---------------------------------------------------------------------------
// (7) What one way in checked and the other did not: plain HTTP and the
// requests of an intercepted tunnel share one pipeline.

// upgradeAnyway is an upstream that answers every request with a websocket
// 101, asked for or not, then reads the next request on the connection and
// sends its method to got.
func upgradeAnyway(got chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if req, err := http.ReadRequest(brw.Reader); err == nil {
			got <- req.Method
		}
	}
}

// ATTACK: a request without Upgrade that the host answers with a 101 (a
// host the agent controls, or one that misbehaves): the connection would
// become a raw channel, and what the agent sends on it next (a request the
// rules deny, a placeholder) would pass unread.
func TestAttackUnrequestedUpgrade(t *testing.T) {
	try := func(t *testing.T, c io.ReadWriter, req, hp string, got chan string) {
		t.Helper()
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			return // refused: no raw channel
		}
		fmt.Fprintf(c, "DELETE /repos/x HTTP/1.1\r\nHost: %s\r\n\r\n", hp)
		select {
		case m := <-got:
			t.Fatalf("after a 101 the client did not ask for, %s reached the host past the rule \"deny DELETE\"", m)
		case <-time.After(5 * time.Second):
			t.Fatalf("the proxy relayed a 101 the client did not ask for")
		}
	}
	t.Run("plain HTTP", func(t *testing.T) {
		e, _, _ := attackEnv(t, nil)
		hp := "plain.test:" + e.plainPort()
		e.addRules(t, "rules:\n  "+hp+":\n    - deny DELETE\n")
		got := make(chan string, 1)
		e.plain.Config.Handler = upgradeAnyway(got)
		c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		try(t, c, fmt.Sprintf("GET http://%s/repos/x HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp), hp, got)
	})
	t.Run("intercepted", func(t *testing.T) {
		e, _, _ := attackEnv(t, nil)
		hp := "example.com:" + e.boundPort
		e.addRules(t, "rules:\n  "+hp+":\n    - deny DELETE\n")
		got := make(chan string, 1)
		e.bound.Config.Handler = upgradeAnyway(got)
		tc := e.interceptConn(t)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		try(t, tc, fmt.Sprintf("GET /repos/x HTTP/1.1\r\nHost: %s\r\n\r\n", hp), hp, got)
	})
}

// ATTACK: the bound host hands the value back in a response trailer, which
// arrives after the body, past a check made when the head arrived.
func TestAttackSecretResponseTrailer(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "ok")
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.Header().Set(http.TrailerPrefix+"X-Late", r.Header.Get("Authorization")) // not announced
	}
	for _, tc := range []struct{ name, value string }{{"plain HTTP", "other-Secret-Value-0123456789"}, {"intercepted", testValue}} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := attackEnv(t, nil)
			u, ph := "https://example.com:"+e.boundPort+"/", e.ph
			e.bound.Config.Handler = http.HandlerFunc(echo)
			if tc.name == "plain HTTP" {
				u, ph = "http://plain.test:"+e.plainPort()+"/", e.ph2
				e.plain.Config.Handler = http.HandlerFunc(echo)
			}
			req, _ := http.NewRequest("GET", u, nil)
			req.Header.Set("Authorization", "Bearer "+ph)
			resp, err := e.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			var sb strings.Builder
			resp.Trailer.Write(&sb)
			if strings.Contains(sb.String(), tc.value) {
				t.Fatalf("the agent read the real value back from a response trailer:\n%s", sb.String())
			}
		})
	}
}

// ATTACK: the bound host hands the value back in the headers of an
// informational response (103 Early Hints) sent before the final one.
func TestAttackSecretInformationalResponse(t *testing.T) {
	hints := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</x>; rel=preload; token="+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "ok")
	}
	for _, tc := range []struct{ name, value string }{{"plain HTTP", "other-Secret-Value-0123456789"}, {"intercepted", testValue}} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := attackEnv(t, nil)
			hp, ph := "example.com:"+e.boundPort, e.ph
			e.bound.Config.Handler = http.HandlerFunc(hints)
			var c io.ReadWriter
			req := "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n"
			if tc.name == "plain HTTP" {
				hp, ph = "plain.test:"+e.plainPort(), e.ph2
				e.plain.Config.Handler = http.HandlerFunc(hints)
				conn, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				c, req = conn, "GET http://%[1]s/ HTTP/1.1\r\nHost: %[1]s\r\nAuthorization: Bearer %[2]s\r\nConnection: close\r\n\r\n"
			} else {
				c = e.interceptConn(t)
			}
			fmt.Fprintf(c, req, hp, ph)
			all, _ := io.ReadAll(c)
			if strings.Contains(string(all), tc.value) {
				t.Fatalf("the agent read the real value back from an informational response:\n%s", all)
			}
		})
	}
}
