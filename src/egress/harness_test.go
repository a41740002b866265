package egress

// Test harness for the adversarial, reload and load suites: a local target
// server that counts every connection and byte it receives, a fake resolver
// (the real DNS cannot be used here: tests must stay on loopback), and raw
// clients that speak to the proxy byte for byte.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// target is an HTTP server on a loopback address that counts connections,
// requests and bytes, and remembers the Host and Proxy-Authorization headers
// it saw.
type target struct {
	ln       net.Listener
	srv      *http.Server
	conns    atomic.Int64
	requests atomic.Int64
	bytes    atomic.Int64
	mu       sync.Mutex
	hosts    []string
	proxyHdr []string
	port     int
}

type countingListener struct {
	net.Listener
	t *target
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.t.conns.Add(1)
		c = &countingConn{Conn: c, t: l.t}
	}
	return c, err
}

type countingConn struct {
	net.Conn
	t *target
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.t.bytes.Add(int64(n))
	return n, err
}

// newTarget starts a target on ip (e.g. "127.0.0.1") at a free port.
func newTarget(t testing.TB, ip string) *target {
	t.Helper()
	tg, err := tryTarget(ip, 0)
	if err != nil {
		t.Fatalf("target listen on %s: %v", ip, err)
	}
	t.Cleanup(func() { tg.srv.Close() })
	return tg
}

func tryTarget(ip string, port int) (*target, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		return nil, err
	}
	tg := &target{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	tg.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tg.requests.Add(1)
			tg.mu.Lock()
			tg.hosts = append(tg.hosts, r.Host)
			if v := r.Header.Get("Proxy-Authorization"); v != "" {
				tg.proxyHdr = append(tg.proxyHdr, v)
			}
			tg.mu.Unlock()
			if r.Header.Get("Upgrade") != "" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "target ok host=%s", r.Host)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go tg.srv.Serve(countingListener{ln, tg})
	return tg, nil
}

// pipeline writes req (several requests) in one write and reads n responses.
func pipeline(t testing.TB, addr, req string, n int) []int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var codes []int
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v (got %v)", i+1, err, codes)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// assertUntouched fails unless not a single connection or byte reached tg
// (nor any of also, counted after the same pause; nil ones are skipped).
func (tg *target) assertUntouched(t testing.TB, also ...*target) {
	t.Helper()
	time.Sleep(30 * time.Millisecond) // let a leaked dial land before counting
	for _, x := range append([]*target{tg}, also...) {
		if x == nil {
			continue
		}
		if n, b := x.conns.Load(), x.bytes.Load(); n != 0 || b != 0 {
			t.Fatalf("target %s was reached: %d connections, %d bytes", x.ln.Addr(), n, b)
		}
	}
}

// fakeResolver maps names to addresses. Every name not listed resolves to
// 127.0.0.1, so that any decision that wrongly lets a name through reaches
// the counting target. It is a fake because real DNS cannot be used in tests.
func fakeResolver(extra map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if addrs, ok := extra[host]; ok {
			var out []netip.Addr
			for _, a := range addrs {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		}
		if strings.HasSuffix(host, ".nxdomain.test") {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
}

type proxyEnv struct {
	srv    *Server
	addr   string
	policy string
	audit  string
}

// startProxy writes policy to a file and serves a proxy on loopback.
func startProxy(t testing.TB, policy string, mod func(*Options)) *proxyEnv {
	t.Helper()
	return startProxyAt(t, policy, mod, "127.0.0.1:0")
}

// startRelayedProxy serves the proxy on a unix socket behind a Relay on
// loopback, as a session's agent reaches it: e.addr is the relay's.
func startRelayedProxy(t testing.TB, policy string, mod func(*Options)) *proxyEnv {
	t.Helper()
	sock := "unix:" + filepath.Join(sockDir(t), "proxy.sock")
	e := startProxyAt(t, policy, mod, sock)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r := &Relay{To: sock, Logf: t.Logf}
	go func() {
		defer close(done)
		r.Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	e.addr = ln.Addr().String()
	return e
}

// sockDir is a fresh directory with a short path, for unix sockets (whose
// paths have room for about 100 bytes; t.TempDir's can be longer).
func sockDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hobbs-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startProxyAt serves a proxy on listen (as Listen takes it).
func startProxyAt(t testing.TB, policy string, mod func(*Options), listen string) *proxyEnv {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &proxyEnv{policy: pf, audit: filepath.Join(dir, "audit.log")}
	opts := Options{
		PolicyFiles: []string{pf},
		AuditPath:   env.audit,
		LookupNetIP: fakeResolver(nil),
		Logf:        t.Logf,
	}
	if mod != nil {
		mod(&opts)
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ln, err := Listen(listen)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	env.srv, env.addr = srv, ln.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return env
}

// raw sends req on a fresh connection to the proxy and returns the status
// code and the whole first response (head and, when present, body).
func (e *proxyEnv) raw(t testing.TB, req string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(req)[0]})
	if err != nil {
		t.Fatalf("no response (silent close?) to %q: %v", firstLine(req), err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode, resp.Status + "\n" + string(body)
}

// tunnel opens a CONNECT tunnel to authority and, if it is established,
// sends a GET through it and returns the target's answer.
func (e *proxyEnv) tunnel(t testing.TB, authority, extraHeaders string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, extraHeaders)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatalf("CONNECT %s: no response (silent close?): %v", authority, err)
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, resp.Status + "\n" + string(body)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: tunnelled\r\nConnection: close\r\n\r\n")
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("through tunnel to %s: %v", authority, err)
	}
	body, _ := io.ReadAll(inner.Body)
	return 200, string(body)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\r'); i >= 0 {
		return s[:i]
	}
	return s
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// mustWaitFor is waitFor for a condition the test needs: it fails the
// test when cond does not hold within d, rather than let what follows pass
// on a state that never came.
func mustWaitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	if !waitFor(d, cond) {
		t.Fatalf("the condition did not hold within %s", d)
	}
}

// dialTunnel opens a CONNECT tunnel and returns the connection, ready for
// bytes to the target.
func dialTunnel(t testing.TB, proxyAddr, authority string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Read the answer byte by byte so no tunnelled byte is swallowed.
	var head []byte
	b := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(b); err != nil {
			t.Fatalf("CONNECT %s: %v", authority, err)
		}
		head = append(head, b[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		t.Fatalf("CONNECT %s: %s", authority, head)
	}
	c.SetReadDeadline(time.Time{})
	return c
}

// httpOverConn does one keep-alive GET on c.
func httpOverConn(c net.Conn) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
