//go:build linux

package egress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The whole package's suites run three times in `make test`: as in
// production (HOBBS_TEST_ENGINE unset), with every CONNECT served by an
// event loop (=loop) and with no loops (=goroutines). These tests pin what
// only the loops do.

// TestEnginePaths: in production mode a CONNECT to a name not in the DNS
// cache is handed to the goroutine path (a lookup may wait), the next one
// to the same name is served by a loop, and a plain-HTTP request is handed
// to net/http — each with the same outcome.
func TestEnginePaths(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.EventLoops, o.loopLookups = 0, false })
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	step := func(what string, wantLoop, wantHand int64, do func() (int, string)) {
		t.Helper()
		code, body := do()
		if code != 200 {
			t.Fatalf("%s: status %d: %s", what, code, body)
		}
		if l, h := e.srv.loopTunnels.Load(), e.srv.handOvers.Load(); l != wantLoop || h != wantHand {
			t.Fatalf("%s: loop tunnels %d, hand-overs %d; want %d, %d", what, l, h, wantLoop, wantHand)
		}
	}
	step("first CONNECT (cache miss)", 0, 1, func() (int, string) { return e.tunnel(t, auth, "") })
	step("second CONNECT (cached)", 1, 1, func() (int, string) { return e.tunnel(t, auth, "") })
	step("plain HTTP", 1, 2, func() (int, string) {
		return e.raw(t, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", tg.port, tg.port))
	})
	// a refusal decided in the loop answers like any other
	code, body := e.tunnel(t, fmt.Sprintf("denied.test:%d", tg.port), "")
	if code != 403 || !strings.Contains(body, "denied by") {
		t.Fatalf("denied CONNECT: %d %s", code, body)
	}
}

// TestLoopNoDelay: both sockets of a loop's tunnel have TCP_NODELAY (a
// relay must not hold back small writes); the client's is inherited from the
// listening socket (Listen sets it before it listens), not set on each
// accept.
func TestLoopNoDelay(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.loopLookups = true; o.EventLoops = 2 })
	c := dialTunnel(t, e.addr, fmt.Sprintf("allowed.test:%d", tg.port))
	defer c.Close()
	if e.srv.loopTunnels.Load() != 1 {
		t.Fatalf("loop tunnels %d, want 1", e.srv.loopTunnels.Load())
	}
	var fds []int
	for _, l := range e.srv.loops.loops {
		if !l.noDelaySet {
			t.Errorf("the listener's TCP_NODELAY was not set")
		}
		done := make(chan struct{})
		l.post(func() {
			for fd := range l.conns {
				fds = append(fds, int(fd))
			}
			close(done)
		})
		<-done
	}
	if len(fds) != 2 {
		t.Fatalf("%d sockets in the loops, want the tunnel's 2", len(fds))
	}
	for _, fd := range fds {
		if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
			t.Errorf("socket %d: TCP_NODELAY %d (%v)", fd, v, err)
		}
	}
}

// TestLoopBackpressure: a client that does not read while the target sends
// megabytes leaves the loop holding the unsent bytes (its socket is full);
// they all arrive, in order, once it reads, and no relay buffer stays taken.
func TestLoopBackpressure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	down := make([]byte, 16<<20+5)
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	port := rawTarget(t, down)
	e := startProxy(t, basePolicy(port), func(o *Options) { o.loopLookups = true; o.EventLoops = 2 })
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
	c.(*net.TCPConn).CloseWrite() // nothing up: the target answers the hash of nothing
	time.Sleep(500 * time.Millisecond)
	if relayBufsOut.Load() == 0 {
		t.Fatal("no relay buffer holds unsent bytes while the client does not read: backpressure path not taken")
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
	got, found := bytes.CutPrefix(got, []byte(ok))
	if !found || len(got) < len(down) || !bytes.Equal(got[:len(down)], down) {
		t.Fatalf("bytes down differ (%d received, want %d + hash)", len(got), len(down))
	}
	if e.srv.loopTunnels.Load() != 1 {
		t.Fatalf("loop tunnels %d, want 1", e.srv.loopTunnels.Load())
	}
	if !waitFor(time.Second, func() bool { return relayBufsOut.Load() == 0 && e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("after the tunnel: %d relay buffers out, %d tunnels", relayBufsOut.Load(), e.srv.ActiveTunnels())
	}
}

// TestLoopShutdown: Shutdown closes connections still sending their head,
// lets an open loop tunnel finish until its context ends, then closes it,
// writes its audit line and leaves no descriptor of the loops behind.
func TestLoopShutdown(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	fds := openFDs()
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.loopLookups = true })
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
	for name, c := range map[string]net.Conn{"tunnel": tun, "head": slow} {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(make([]byte, 64))
		if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
			t.Fatalf("%s still open after Shutdown (read %d bytes, %v)", name, n, err)
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
	if !waitFor(2*time.Second, func() bool { return openFDs() <= fds }) {
		t.Fatalf("descriptors: %d after Shutdown, %d before the proxy (%s)", openFDs(), fds, fdKinds())
	}
}

// TestLoopAuditBatch: a loop gathers its audit lines and sends them in
// batches. Every line still reaches the file while the proxy idles on: the
// batch is sent within loopAuditWait, not only when it fills.
func TestLoopAuditBatch(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.loopLookups = true; o.EventLoops = 2 })
	lines := func() int { return strings.Count(readFile(t, e.audit), "\n") }
	for i := range 30 {
		target := fmt.Sprintf("allowed.test:%d", tg.port)
		if i%5 == 0 {
			target = fmt.Sprintf("denied.test:%d", tg.port)
		}
		e.tunnel(t, target, "")
	}
	if e.srv.loopTunnels.Load() != 24 {
		t.Fatalf("loop tunnels %d, want 24", e.srv.loopTunnels.Load())
	}
	if !waitFor(2*time.Second, func() bool { return lines() == 30 }) {
		t.Fatalf("%d audit lines 2 s after 30 decisions, want 30: a batch waits for more", lines())
	}
	if n := strings.Count(readFile(t, e.audit), `"egress.allow"`); n != 24 {
		t.Fatalf("%d allow lines, want 24", n)
	}
}

// TestLoopAuditShutdown: the lines a loop has gathered when Shutdown begins
// are in the file when it returns, also when the loop lives on meanwhile
// (a tunnel still open) and its batch would not be due for an hour.
func TestLoopAuditShutdown(t *testing.T) {
	defer func(w time.Duration) { loopAuditWait = w }(loopAuditWait)
	loopAuditWait = time.Hour
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.loopLookups = true; o.EventLoops = 1 })
	for range 20 {
		e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), "")
	}
	open := dialTunnel(t, e.addr, fmt.Sprintf("allowed.test:%d", tg.port))
	defer open.Close()
	waitFor(2*time.Second, func() bool { return e.srv.ActiveTunnels() == 1 })
	if b, _ := os.ReadFile(e.audit); len(b) != 0 {
		t.Fatalf("lines written before Shutdown with the batch not due:\n%s", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { e.srv.Shutdown(ctx); close(done) }()
	// Shutdown waits for the open tunnel; the gathered lines are written
	// meanwhile (when the loop stops accepting, not when it exits).
	if !waitFor(2*time.Second, func() bool { return strings.Count(readFile(t, e.audit), "\n") == 20 }) {
		t.Fatalf("%d audit lines while Shutdown waits for the last tunnel, want 20", strings.Count(readFile(t, e.audit), "\n"))
	}
	open.Close()
	<-done
	if n := strings.Count(readFile(t, e.audit), `"egress.allow"`); n != 21 {
		t.Fatalf("%d allow lines after Shutdown, want 21", n)
	}
}

// TestLoopEdges: a loop reads a socket only when an edge says it has
// something. Each way a byte or an end can arrive must bring it: a target
// that speaks first (its bytes may come with the connect's completion), bytes
// a client sends behind its head while the upstream is being dialled, and a
// client's last bytes arriving together with its end. A missed edge leaves
// the tunnel waiting for ever; the deadlines make that a failure.
func TestLoopEdges(t *testing.T) {
	banner := []byte("220 target speaks first\r\n")
	port := rawTarget(t, banner)
	e := startProxy(t, basePolicy(port), func(o *Options) { o.loopLookups = true; o.EventLoops = 1 })
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
	if n := e.srv.loopTunnels.Load(); n != 120 {
		t.Fatalf("loop tunnels %d, want 120", n)
	}
}

// A leftover is kept in the smallest buffer that holds it, and goes back to
// the pool of its size.
func TestPendBufSizes(t *testing.T) {
	before := relayBufsOut.Load()
	small, big := getPendBuf(relayBufSize), getPendBuf(relayBufSize+1)
	if len(*small) != relayBufSize || len(*big) != loopBufSize {
		t.Fatalf("pending buffers of %d and %d bytes, want %d and %d", len(*small), len(*big), relayBufSize, loopBufSize)
	}
	putPendBuf(small)
	putPendBuf(big)
	if got := relayBufsOut.Load(); got != before {
		t.Fatalf("%d buffers out after both went back, want %d", got, before)
	}
	if b := getRelayBuf(); len(*b) != relayBufSize {
		t.Fatalf("a loop-sized buffer went back to the relay pool")
	} else {
		putRelayBuf(b)
	}
}

// TestLoopSpliceIsolation: a bulk download is moved by splice(2) through
// the loop's one pipe; a client that resets mid-stream leaves no byte of
// its stream in that pipe for the next tunnel, and the next download
// arrives exact.
func TestLoopSpliceIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	down := make([]byte, 8<<20)
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	port := rawTarget(t, down)
	e := startProxy(t, basePolicy(port), func(o *Options) { o.loopLookups = true; o.EventLoops = 1 })
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
	if e.srv.splicedBytes.Load() == 0 {
		t.Fatal("no byte was spliced: the bulk path was not taken")
	}
	if !waitFor(time.Second, func() bool { return relayBufsOut.Load() == 0 && e.srv.ActiveTunnels() == 0 }) {
		t.Fatalf("after the tunnels: %d relay buffers out, %d tunnels", relayBufsOut.Load(), e.srv.ActiveTunnels())
	}
}

// TestLoopEMFILE: out of descriptors, a loop stops accepting for a while
// (its listener is level-triggered: it would spin) and says so; once
// descriptors are free it accepts again, with its splice pipe, and no
// descriptor is left over.
func TestLoopEMFILE(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	tg := newTarget(t, "127.0.0.1")
	logs := make(chan string, 100)
	e := startProxy(t, basePolicy(tg.port), func(o *Options) {
		o.loopLookups, o.EventLoops = true, 1
		o.Logf = func(f string, a ...any) {
			select {
			case logs <- fmt.Sprintf(f, a...):
			default:
			}
		}
	})
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	if code, body := e.tunnel(t, auth, ""); code != 200 {
		t.Fatalf("before: %d %s", code, body)
	}
	base := openFDs()

	// The clients' sockets are made first: then only the proxy runs out
	// when its limit leaves room for two descriptors more.
	ap, err := netip.ParseAddrPort(e.addr)
	if err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	var socks []int
	for range 8 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, fd)
	}
	low := lim
	low.Cur = uint64(openFDs() + 2)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		}
	}
	t.Cleanup(restore)
	for _, fd := range socks {
		unix.Connect(fd, sa) // the kernel completes it; the proxy accepts while it can
	}
	var said []string
	deadline := time.After(2 * time.Second)
wait:
	for {
		select {
		case l := <-logs:
			said = append(said, l)
			if strings.Contains(l, "accept:") && strings.Contains(l, "retrying") {
				break wait
			}
		case <-deadline:
			t.Fatalf("out of descriptors, the proxy said %q; want it to stop accepting for a while", said)
		}
	}
	for _, fd := range socks {
		unix.Close(fd)
	}
	restore()
	// Accepting again: a tunnel works, and what the shortage took is back.
	if !waitFor(3*time.Second, func() bool { code, _ := e.tunnel(t, auth, ""); return code == 200 }) {
		t.Fatal("no tunnel after descriptors were free again")
	}
	l := e.srv.loops.loops[0]
	done := make(chan bool)
	l.post(func() { done <- l.pipe[0] >= 0 && l.paused == 0 })
	if !<-done {
		t.Fatal("the loop has no splice pipe or is still paused")
	}
	if !waitFor(2*time.Second, func() bool { return openFDs() <= base }) {
		t.Fatalf("%d descriptors open, %d before the shortage: %s", openFDs(), base, fdKinds())
	}
}
