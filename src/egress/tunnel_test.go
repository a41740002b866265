package egress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestBackpressure: a client that does not read while the target sends
// megabytes stalls the relay (its socket is full); the bytes all arrive, in
// order, once it reads, and the tunnel ends.
func TestBackpressure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	down := make([]byte, 16<<20+5)
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	port := rawTarget(t, down)
	e := startProxy(t, basePolicy(port), nil)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
	c.(*net.TCPConn).CloseWrite() // nothing up: the target answers the hash of nothing
	time.Sleep(500 * time.Millisecond)
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
	got, found := bytes.CutPrefix(got, []byte(ok))
	if !found || len(got) < len(down) || !bytes.Equal(got[:len(down)], down) {
		t.Fatalf("bytes down differ (%d received, want %d + hash)", len(got), len(down))
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("after the tunnel: %d tunnels", e.srv.ActiveTunnels())
	}
}

// TestShutdownDeadline: Shutdown closes connections still sending their
// head, lets an open tunnel go on until its context ends, then closes it,
// writes its audit line and leaves no descriptor behind.
func TestShutdownDeadline(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	fds := openFDs()
	e := startProxy(t, basePolicy(tg.port), nil)
	tun := dialTunnel(t, e.addr, fmt.Sprintf("allowed.test:%d", tg.port))
	defer tun.Close()
	slow, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "CONNECT allowed.test") // a head that never ends
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	e.srv.Shutdown(ctx)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("Shutdown returned after %v: did not wait for the open tunnel", d)
	}
	// Closed: the read ends (a refusal of the cut head may come first:
	// the server answers 400 when the cut read reaches it as a bad head).
	for name, c := range map[string]net.Conn{"tunnel": tun, "head": slow} {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s still open after Shutdown (read %q)", name, b)
		}
		if name == "head" && len(b) > 0 && !bytes.HasPrefix(b, []byte("HTTP/1.1 400 ")) {
			t.Fatalf("the cut head was answered %q", b)
		}
	}
	if n := e.srv.ActiveTunnels(); n != 0 {
		t.Fatalf("%d tunnels after Shutdown", n)
	}
	b, _ := os.ReadFile(e.audit)
	if !strings.Contains(string(b), `"egress.allow"`) {
		t.Fatalf("no audit line for the closed tunnel:\n%s", b)
	}
	tun.Close()
	slow.Close()
	// The relay's splice pipes sit in a pool until a collection frees them.
	if !waitFor(10*time.Second, func() bool { runtime.GC(); return openFDs() <= fds }) {
		t.Fatalf("descriptors: %d after Shutdown, %d before the proxy (%s)", openFDs(), fds, fdKinds())
	}
}

// TestTunnelEdges: each way a byte or an end can arrive reaches the other
// side: a target that speaks first, bytes a client sends behind its head
// while the upstream is being dialled, and a client's last bytes arriving
// together with its end. A lost byte or end leaves the tunnel waiting for
// ever; the deadlines make that a failure.
func TestTunnelEdges(t *testing.T) {
	banner := []byte("220 target speaks first\r\n")
	port := rawTarget(t, banner)
	e := startProxy(t, basePolicy(port), nil)
	authority := fmt.Sprintf("allowed.test:%d", port)
	hashOf := func(p []byte) []byte { h := sha256.Sum256(p); return h[:] }
	expect := func(t *testing.T, c net.Conn, want []byte) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %q (%v), want %q", got, err, want)
		}
	}
	t.Run("target speaks first", func(t *testing.T) {
		for range 30 {
			c := dialTunnel(t, e.addr, authority)
			expect(t, c, banner) // nothing sent: only the target's bytes
			c.(*net.TCPConn).CloseWrite()
			expect(t, c, hashOf(nil))
			c.Close()
		}
	})
	t.Run("bytes behind the head, in a write of their own", func(t *testing.T) {
		payload := []byte("sent while the proxy dials")
		for i := range 60 {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", authority)
			if i%2 == 1 {
				time.Sleep(time.Duration(i) * 10 * time.Microsecond)
			}
			c.Write(payload)
			c.(*net.TCPConn).CloseWrite()
			expect(t, c, append([]byte("HTTP/1.1 200 Connection established\r\n\r\n"), banner...))
			expect(t, c, hashOf(payload))
			c.Close()
		}
	})
	t.Run("last bytes and the end together", func(t *testing.T) {
		for i := range 30 {
			c := dialTunnel(t, e.addr, authority)
			expect(t, c, banner)
			payload := bytes.Repeat([]byte{byte(i)}, 1+i*1000)
			c.Write(payload)
			c.(*net.TCPConn).CloseWrite()
			expect(t, c, hashOf(payload))
			c.Close()
		}
	})
}

// TestResetIsolation: a client that resets in the middle of a bulk
// download leaves no byte of its stream to the next tunnel (the relay's
// splice pipes are shared through a pool), and the next download arrives
// exact.
func TestResetIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	down := make([]byte, 8<<20)
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	port := rawTarget(t, down)
	e := startProxy(t, basePolicy(port), nil)
	const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
	for i := range 5 {
		// A: read a little of the stream, then reset
		a := dialTunnel(t, e.addr, fmt.Sprintf("allowed.test:%d", port))
		io.ReadFull(a, make([]byte, 1<<20))
		a.(*net.TCPConn).SetLinger(0)
		a.Close()
		// B: the whole stream, exact
		b, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		b.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(b, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
		b.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(b)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, found := bytes.CutPrefix(got, []byte(ok))
		if !found || len(got) != len(down)+sha256.Size || !bytes.Equal(got[:len(down)], down) {
			t.Fatalf("round %d: tunnel B got %d bytes, want %d exact + hash", i, len(got), len(down)+sha256.Size)
		}
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("after the tunnels: %d tunnels", e.srv.ActiveTunnels())
	}
}

// TestIdleTunnelsAreCheap: an open tunnel with nothing to relay holds no
// copy buffer: what 200 idle tunnels through the relay and the proxy add to
// the heap and the goroutine stacks of this process (relay, proxy and test
// clients together) stays below one 32 KiB buffer per direction.
func TestIdleTunnelsAreCheap(t *testing.T) {
	// The target accepts and holds its connections, spending nothing on them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startRelayedProxy(t, basePolicy(port), nil)
	t.Cleanup(func() { // before the proxy's Shutdown, which waits for the tunnels
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	auth := fmt.Sprintf("allowed.test:%d", port)
	defer dialTunnel(t, e.addr, auth).Close() // pools and the first goroutines
	inUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse
	}
	const n = 200
	before := inUse()
	for range n {
		defer dialTunnel(t, e.addr, auth).Close()
	}
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == n+1 }) {
		t.Fatalf("%d tunnels open, want %d", e.srv.ActiveTunnels(), n+1)
	}
	per := (int64(inUse()) - int64(before)) / n
	t.Logf("%d bytes per idle tunnel (relay, proxy and client)", per)
	if per > 32<<10 {
		t.Fatalf("%d bytes per idle tunnel: a relay holds a buffer while idle", per)
	}
}

// TestShutdownEndsDials: a tunnel whose upstream never answers the connect
// (a listener whose queue is full drops the handshake) is ended by Shutdown
// when its context ends, not after the dial timeout: the proxy exits within
// its grace period and still writes the tunnel's audit line.
func TestShutdownEndsDials(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	// Fill the accept queue (never accepted): later handshakes are dropped.
	for range 4 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err != nil {
			break
		}
		defer c.Close()
	}
	e := startProxy(t, basePolicy(port), func(o *Options) { o.DialTimeout = 30 * time.Second })
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
	if !waitFor(10*time.Second, func() bool { return e.srv.ActiveTunnels() == 1 }) {
		t.Fatalf("%d tunnels, want 1 dialling", e.srv.ActiveTunnels())
	}
	time.Sleep(100 * time.Millisecond) // the dial is under way
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	e.srv.Shutdown(ctx)
	// Ended by the dial timeout, Shutdown would take 30 s; half of that
	// tells the two apart however busy the machine is.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Shutdown took %v with a dial under way", d)
	}
	if log := readFile(t, e.audit); !strings.Contains(log, `"egress.allow"`) {
		t.Fatalf("no audit line for the tunnel being dialled:\n%s", log)
	}
}
