package egress

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// rawTarget is a TCP server that hashes what each client sends until its
// half-close while sending it down bytes, then sends the hash of what it
// received and closes. It checks the relay byte for byte, both ways at once
// and across the half-close.
func rawTarget(t *testing.T, down []byte) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); c.Write(down) }()
				h := sha256.New()
				io.Copy(h, c)
				wg.Wait()
				c.Write(h.Sum(nil))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRelayExact: megabytes both ways at once, the first of them sent in
// the same write as the CONNECT head (early data, relayed from the
// replaying wrapper), arrive intact and in order; the client's half-close
// reaches the target, whose answer after it still comes back. Also through
// a Relay to the proxy's unix socket, as in a session.
func TestRelayExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	up := make([]byte, 3<<20+17)
	down := make([]byte, 5<<20+3)
	for i := range up {
		up[i] = byte(rng.Uint32())
	}
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	port := rawTarget(t, down)
	for _, tc := range []struct {
		name  string
		start func(testing.TB, string, func(*Options)) *proxyEnv
	}{{"tcp", startProxy}, {"unix", startRelayedProxy}} {
		t.Run(tc.name, func(t *testing.T) { testRelayExact(t, tc.start(t, basePolicy(port), nil), port, up, down) })
	}
}

func testRelayExact(t *testing.T, e *proxyEnv, port int, up, down []byte) {
	for _, early := range []int{0, 1000} {
		t.Run(fmt.Sprintf("early=%d", early), func(t *testing.T) {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			head := fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port)
			if _, err := c.Write(append([]byte(head), up[:early]...)); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() {
				_, err := c.Write(up[early:])
				if err == nil {
					err = c.(*net.TCPConn).CloseWrite()
				}
				errc <- err
			}()
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
			if !bytes.HasPrefix(got, []byte(ok)) {
				t.Fatalf("answer %q", got[:min(len(got), 80)])
			}
			got = got[len(ok):]
			sum := sha256.Sum256(up)
			if len(got) != len(down)+len(sum) {
				t.Fatalf("got %d bytes down, want %d", len(got), len(down)+len(sum))
			}
			if !bytes.Equal(got[:len(down)], down) {
				t.Fatal("bytes down differ")
			}
			if !bytes.Equal(got[len(down):], sum[:]) {
				t.Fatal("the target received other bytes than were sent up")
			}
		})
	}
}

// TestIdleTunnelsHoldNoBuffer: a relay takes its copy buffer only while
// bytes move, so open tunnels with nothing to relay hold none.
func TestIdleTunnelsHoldNoBuffer(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	var conns []net.Conn
	for i := 0; i < 20; i++ {
		c := dialTunnel(t, e.addr, fmt.Sprintf("allowed.test:%d", tg.port))
		defer c.Close()
		if err := httpOverConn(c); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if n := e.srv.ActiveTunnels(); n != len(conns) {
		t.Fatalf("%d tunnels open, want %d", n, len(conns))
	}
	if !waitFor(time.Second, func() bool { return relayBufsOut.Load() == 0 }) {
		t.Fatalf("%d relay buffers held by %d idle tunnels, want 0", relayBufsOut.Load(), len(conns))
	}
}
