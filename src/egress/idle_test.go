package egress

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestIdleTunnelsReaped: a tunnel with no traffic either way is closed after
// the idle timeout; a tunnel in use is not.
// Also with the client on the proxy's unix socket (a session's agent, through
// its relay), whose side's idleness the kernel does not tell.
func TestIdleTunnelsReaped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("idle reaping uses TCP_INFO (Linux)")
	}
	// Each waits out the idle timeout with its own proxy: side by side.
	t.Run("tcp", func(t *testing.T) { t.Parallel(); testIdleTunnelsReaped(t, startProxy) })
	t.Run("unix", func(t *testing.T) { t.Parallel(); testIdleTunnelsReaped(t, startRelayedProxy) })
}

func testIdleTunnelsReaped(t *testing.T, start func(testing.TB, string, func(*Options)) *proxyEnv) {
	// The busy tunnel moves bytes every few milliseconds, a hundred times
	// more often than the idle timeout, for as long as the idle one takes to
	// be reaped: no fixed span of traffic that a loaded machine could let
	// lapse into an idleness of its own.
	const idleTimeout = time.Second
	tg := newTarget(t, "127.0.0.1")
	e := start(t, basePolicy(tg.port), func(o *Options) { o.IdleTimeout = idleTimeout })
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	idle := dialTunnel(t, e.addr, auth)
	defer idle.Close()
	busy := dialTunnel(t, e.addr, auth)
	defer busy.Close()
	reaped := make(chan error, 1)
	go func() {
		idle.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net: no reaper
		_, err := idle.Read(make([]byte, 1))
		reaped <- err
	}()
	for done := false; !done; {
		select {
		case err := <-reaped:
			if err != io.EOF {
				t.Fatalf("idle tunnel not closed after the idle timeout: %v", err)
			}
			done = true
		default:
			time.Sleep(10 * time.Millisecond)
		}
		if err := httpOverConn(busy); err != nil {
			t.Fatalf("busy tunnel cut: %v", err)
		}
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 1 }) {
		t.Fatalf("%d tunnels open, want 1 (the busy one)", e.srv.ActiveTunnels())
	}
}

// TestIdleTunnelWithEarlyDataReaped: a tunnel whose client sent bytes right
// behind its CONNECT head (relayed through a replaying wrapper, not the bare
// socket) is reaped like any other.
func TestIdleTunnelWithEarlyDataReaped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("idle reaping uses TCP_INFO (Linux)")
	}
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.IdleTimeout = 400 * time.Millisecond })
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// early data: a request head the target answers, keeping the connection
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", tg.port)
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a safety net: no answer, no reaper
	buf := make([]byte, 4096)
	got := ""
	for !strings.Contains(got, "target ok") {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("before the answer: %v (%q)", err, got)
		}
		got += string(buf[:n])
	}
	for {
		if _, err := c.Read(buf); err != nil {
			if err != io.EOF {
				t.Fatalf("idle tunnel with early data not closed: %v", err)
			}
			break
		}
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("%d tunnels open", e.srv.ActiveTunnels())
	}
}
