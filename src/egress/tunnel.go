package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// tunnel is one established CONNECT tunnel.
type tunnel struct {
	client, upstream net.Conn
	closeOnce        sync.Once
	ended            atomic.Int32 // directions that reached EOF
}

func (t *tunnel) close() {
	t.closeOnce.Do(func() {
		t.client.Close()
		t.upstream.Close()
	})
}

// idle is how long neither side has sent or received data (kernel's view).
// A side whose idleness is unknown (a client on a unix socket) does not
// count: every byte it moves crosses the upstream side too. Both unknown: 0.
func (t *tunnel) idle() time.Duration {
	c, u := idleFor(t.client), idleFor(t.upstream)
	switch {
	case c < 0 && u < 0:
		return 0
	case c < 0:
		return u
	case u < 0:
		return c
	}
	return min(c, u)
}

// tunnelHandle is what the tunnel set holds: a goroutine-relayed tunnel or
// one relayed by an event loop (loop_linux.go), which reaps its own idle
// tunnels (idle returns 0) and closes them on its own thread.
type tunnelHandle interface {
	close()
	idle() time.Duration
}

// tunnelSet tracks open tunnels for draining, the idle reaper and tests.
type tunnelSet struct {
	mu     sync.Mutex
	m      map[tunnelHandle]struct{}
	wg     sync.WaitGroup
	reaper bool
	closed bool // draining: no new tunnels
}

// add registers t; it returns false once the set is draining.
func (ts *tunnelSet) add(t tunnelHandle) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return false
	}
	ts.m[t] = struct{}{}
	ts.wg.Add(1)
	return true
}

// drain refuses new tunnels from now on.
func (ts *tunnelSet) drain() {
	ts.mu.Lock()
	ts.closed = true
	ts.mu.Unlock()
}

func (ts *tunnelSet) remove(t tunnelHandle) {
	ts.mu.Lock()
	delete(ts.m, t)
	ts.mu.Unlock()
	ts.wg.Done()
}

func (ts *tunnelSet) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.m)
}

func (ts *tunnelSet) snapshot() []tunnelHandle {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]tunnelHandle, 0, len(ts.m))
	for t := range ts.m {
		out = append(out, t)
	}
	return out
}

func (ts *tunnelSet) closeAll() {
	for _, t := range ts.snapshot() {
		t.close()
	}
}

// wait waits for every tunnel to end or ctx to be done; it reports whether
// all ended.
func (ts *tunnelSet) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { ts.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// startTunnel dials the checked addresses, answers the client and relays
// bytes both ways in two goroutines (the HTTP server's goroutine returns, so
// an idle tunnel costs two small stacks and no buffers: see relay). The
// audit line is written when it ends.
//
// With a registered func (the fast path), the client-to-target copy runs in
// the calling goroutine, saving a goroutine per tunnel, and registered is
// called once the tunnel is in the set (or refused), before any relaying.
func (s *Server) startTunnel(client net.Conn, addrs []netip.Addr, rec *record, registered func()) {
	inline := registered != nil
	release := func() {
		if registered != nil {
			registered()
			registered = nil
		}
	}
	up, err := dialFirst(context.Background(), addrs, rec.port, s.opts.DialTimeout)
	if err != nil {
		release()
		rec.err = "dial: " + err.Error()
		s.log(rec)
		writeRaw(client, http.StatusBadGateway, refusal(http.StatusBadGateway, rec))
		client.Close()
		return
	}
	if ra, ok := up.RemoteAddr().(*net.TCPAddr); ok {
		rec.ip = ra.IP.String()
	}
	t := &tunnel{client: client, upstream: up}
	added := s.tunnels.add(t)
	release()
	if !added {
		up.Close()
		rec.err = "proxy shutting down"
		s.log(rec)
		writeRaw(client, http.StatusServiceUnavailable, "hobbs proxy: shutting down\n")
		client.Close()
		return
	}
	client.SetWriteDeadline(time.Now().Add(s.opts.DialTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		up.Close()
		rec.err = "client went away"
		s.log(rec)
		s.tunnels.remove(t)
		return
	}
	client.SetWriteDeadline(time.Time{})
	s.ensureReaper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec.down = pipe(client, up, &t.ended)
	}()
	upstream := func() {
		rec.up = pipe(up, client, &t.ended)
		wg.Wait()
		t.close()
		s.log(rec) // before remove: Shutdown flushes the audit log once every tunnel is gone
		s.tunnels.remove(t)
	}
	if inline {
		upstream()
		return
	}
	go upstream()
}

// pipe copies src to dst until EOF or error, then half-closes dst (or closes
// both on error) and returns the byte count. The direction that ends second
// closes both at once: its half-close would be followed by the close anyway
// (one shutdown(2) per tunnel saved; the peer sees the same FIN).
func pipe(dst, src net.Conn, ended *atomic.Int32) int64 {
	n, err := relay(dst, src)
	if err == nil && ended.Add(1) == 1 {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			return n
		}
	}
	dst.Close()
	src.Close()
	return n
}

// relayBufSize is the copy buffer of one relay direction. It is taken from
// relayBufs only for the time one read and its write take: an idle tunnel
// holds no buffer, so 500 idle tunnels cost their goroutines' stacks and
// nothing more.
//
// Why not splice(2), which io.Copy uses between two TCP sockets: when this
// relay was written, the proxy benchmark on this project's machines
// (virtualised, 2 cores) measured a relay through user space with a pooled
// buffer at 1.2–1.5× the bytes per second of splice. The event loops, which
// measured later the other way round, splice a direction once it carries
// bulk (see evLoop.pump); short tunnels cost fewer system calls by read and
// write either way.
const relayBufSize = 128 << 10

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayBufSize); return &b }}

// relayBufsOut counts the relay buffers taken and not yet returned (tests
// check that idle tunnels hold none).
var relayBufsOut atomic.Int64

func getRelayBuf() *[]byte {
	relayBufsOut.Add(1)
	return relayBufs.Get().(*[]byte)
}

func putRelayBuf(b *[]byte) {
	relayBufsOut.Add(-1)
	relayBufs.Put(b)
}

// relay copies src to dst until src's EOF (nil error) or an error, and
// returns the bytes written. A TCP source (bare or replaying early data) is
// read through its raw connection, so that the buffer is taken only once
// bytes are there; anything else goes through io.Copy.
func relay(dst, src net.Conn) (int64, error) {
	var total int64
	if rc, ok := src.(*replayConn); ok {
		if len(rc.pending) > 0 {
			n, err := dst.Write(rc.pending)
			total += int64(n)
			rc.pending = nil
			if err != nil {
				return total, err
			}
		}
		src = rc.Conn
	}
	tc, ok := src.(*net.TCPConn)
	if !ok {
		n, err := io.Copy(dst, src)
		return total + n, err
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return total, err
	}
	for {
		var bp *[]byte
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			if bp == nil {
				bp = getRelayBuf()
			}
			for {
				n, rerr = rawRead(int(fd), *bp)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN { // nothing yet: wait without the buffer
				putRelayBuf(bp)
				bp = nil
				return false
			}
			return true
		})
		switch {
		case err != nil: // closed (reaper, shutdown) or deadline
		case rerr != nil:
			err = os.NewSyscallError("read", rerr)
		case n == 0: // EOF
		default:
			w, werr := rawWrite(dst, (*bp)[:n])
			total += int64(w)
			err = werr
		}
		if bp != nil {
			putRelayBuf(bp)
		}
		if err != nil || rerr != nil || n <= 0 {
			return total, err
		}
	}
}

// ensureReaper starts, once, the goroutine that closes idle tunnels.
func (s *Server) ensureReaper() {
	s.tunnels.mu.Lock()
	start := !s.tunnels.reaper
	s.tunnels.reaper = true
	s.tunnels.mu.Unlock()
	if !start {
		return
	}
	go func() {
		every := s.opts.IdleTimeout / 4
		if every < 100*time.Millisecond {
			every = 100 * time.Millisecond
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for range tick.C {
			if s.stopped.Load() && s.tunnels.count() == 0 {
				return
			}
			for _, t := range s.tunnels.snapshot() {
				if t.idle() >= s.opts.IdleTimeout {
					t.close()
				}
			}
		}
	}()
}

// rawRead reads from a non-blocking socket with a raw system call: it cannot
// block, so the scheduler need not hand the P to another thread meanwhile
// (on the project's virtualised machines a socket call often lasts long
// enough for the runtime to do that, at a thread wake-up each time).
func rawRead(fd int, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// rawWrite writes all of p to c. A TCP socket is written with raw,
// non-blocking system calls (as rawRead), waiting for room through the
// poller; anything else through Write.
func rawWrite(c net.Conn, p []byte) (int, error) {
	if w, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = w.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c.Write(p)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0, err
	}
	done := 0
	var werr error
	err = raw.Write(func(fd uintptr) bool {
		for done < len(p) {
			q := p[done:]
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&q[0])), uintptr(len(q)))
			switch e {
			case 0:
				done += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until the socket has room
			default:
				werr = os.NewSyscallError("write", e)
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return done, err
}
