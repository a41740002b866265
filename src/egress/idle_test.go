package egress

import (
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// TestIdleTunnelsReaped: a tunnel with no traffic either way is closed after
// the idle timeout; a tunnel in use is not.
func TestIdleTunnelsReaped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("idle reaping uses TCP_INFO (Linux)")
	}
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.IdleTimeout = 400 * time.Millisecond })
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	idle := dialTunnel(t, e.addr, auth)
	defer idle.Close()
	busy := dialTunnel(t, e.addr, auth)
	defer busy.Close()
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := httpOverConn(busy); err != nil {
			t.Fatalf("busy tunnel cut: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle tunnel not closed after the idle timeout: %v", err)
	}
	if e.srv.ActiveTunnels() != 1 {
		t.Fatalf("%d tunnels open, want 1 (the busy one)", e.srv.ActiveTunnels())
	}
}
