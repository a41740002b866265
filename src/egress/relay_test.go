package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRelayedProxyChecks: behind a Relay, on its unix socket, the proxy
// decides as on TCP: an allowed tunnel works, a denied one is refused and
// never reaches the target, a client without the token is refused; the
// audit names the client "unix".
func TestRelayedProxyChecks(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startRelayedProxy(t, basePolicy(tg.port), func(o *Options) { o.AuthToken = "tok" })
	auth := "Proxy-Authorization: Basic aG9iYnM6dG9r\r\n" // hobbs:tok
	if code, body := e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), auth); code != 200 || !strings.Contains(body, "target ok") {
		t.Fatalf("allowed tunnel: %d %s", code, body)
	}
	if code, _ := e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), ""); code != 407 {
		t.Fatalf("tunnel without the token: %d, want 407", code)
	}
	conns := tg.conns.Load()
	if code, _ := e.tunnel(t, fmt.Sprintf("denied.test:%d", tg.port), auth); code != 403 {
		t.Fatalf("denied tunnel: %d, want 403", code)
	}
	if code, _ := e.raw(t, fmt.Sprintf("GET http://denied.test:%d/ HTTP/1.1\r\nHost: denied.test:%[1]d\r\n%sConnection: close\r\n\r\n", tg.port, auth)); code != 403 {
		t.Fatalf("denied plain request: %d, want 403", code)
	}
	time.Sleep(30 * time.Millisecond)
	if n := tg.conns.Load(); n != conns {
		t.Fatalf("denied requests reached the target (%d connections)", n-conns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx) // flushes the audit log
	f, err := os.Open(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var l struct{ Detail struct{ Client string } }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Detail.Client != "unix" {
			t.Errorf("audit client %q, want unix: %s", l.Detail.Client, sc.Text())
		}
	}
	if lines != 5 { // 4 decisions and the allowed target's opening
		t.Errorf("%d audit lines, want 5", lines)
	}
}

// TestListenUnix: the socket is its owner's only; a socket left by a killed
// proxy is replaced; any other file in its place is not touched.
func TestListenUnix(t *testing.T) {
	dir := sockDir(t)
	p := filepath.Join(dir, "proxy.sock")
	stale, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close() // the file stays, as after a kill
	ln, err := Listen("unix:" + p)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	ln.Close()
	reg := filepath.Join(dir, "file")
	if err := os.WriteFile(reg, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("unix:" + reg); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(reg); string(b) != "keep" {
		t.Fatal("the regular file was replaced")
	}
	if _, err := Listen("unix:"); err == nil {
		t.Fatal("unix: without a path was accepted")
	}
}

// TestRelayProxyDown: with no proxy behind it, the relay holds a client
// for DialTimeout, then closes its connection (no hang); a client that
// comes while the proxy is starting gets through once it listens.
func TestRelayProxyDown(t *testing.T) {
	dir := sockDir(t)
	sock := filepath.Join(dir, "proxy.sock")
	relay := func(dialTimeout time.Duration) (addr string, cancel func(), done <-chan error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		errc := make(chan error, 1)
		go func() { errc <- (&Relay{To: "unix:" + sock, DialTimeout: dialTimeout}).Serve(ctx, ln) }()
		return ln.Addr().String(), cancel, errc
	}
	addr, _, _ := relay(300 * time.Millisecond)
	start := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a safety net: a relay that never gives up
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("client of a relay without a proxy: %v, want EOF", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("gave up after %v: the dial must be retried for DialTimeout", d)
	}
	c.Close()
	// A client that comes while the proxy is starting is held, and gets
	// through once the proxy (here an echo server) listens. (A relay whose
	// DialTimeout is a safety net: the proxy comes once the client is
	// connected, however long the machine takes to get there.)
	addr, cancel, done := relay(20 * time.Second)
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	time.Sleep(100 * time.Millisecond) // the relay is dialling meanwhile
	up, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		s, err := up.Accept()
		if err == nil {
			io.Copy(s, s)
			s.Close()
		}
	}()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "ping" {
		t.Fatalf("through the relay: %q, %v", got, err)
	}
	// Ending ctx stops the relay, also with a connection open.
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not stop")
	}
}
