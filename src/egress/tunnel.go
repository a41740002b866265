package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel is one CONNECT tunnel, from the decision to allow it until both
// directions have ended. It is in the server's tunnel set before its client
// connection is hijacked from the HTTP server, so that Shutdown, which stops
// tracking a connection once it is hijacked, still waits for it.
type tunnel struct {
	mu               sync.Mutex
	client, upstream net.Conn
	closed           bool
	ended            atomic.Int32 // directions that reached EOF
	// ctx ends when the tunnel is closed: a dial under way gives up.
	ctx    context.Context
	cancel context.CancelFunc
	// inner serves an intercepted tunnel's requests (intercept.go).
	inner *http.Server
}

// attach records the tunnel's connections, so that closing the tunnel closes
// them; false when the tunnel was closed meanwhile (shutdown), and the
// caller must close them itself.
func (t *tunnel) attach(client, upstream net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.client, t.upstream = client, upstream
	return true
}

func (t *tunnel) close() {
	t.cancel()
	t.mu.Lock()
	t.closed = true
	c, u := t.client, t.upstream
	t.mu.Unlock()
	if c != nil {
		c.Close()
	}
	if u != nil {
		u.Close()
	}
}

// idle is how long neither side has sent or received data (kernel's view).
// A side whose idleness is unknown (a client on a unix socket) does not
// count: every byte it moves crosses the upstream side too. Both unknown,
// or a tunnel still being set up: 0.
func (t *tunnel) idle() time.Duration {
	t.mu.Lock()
	c, u := t.client, t.upstream
	t.mu.Unlock()
	if c == nil || u == nil {
		return 0
	}
	ci, ui := idleFor(c), idleFor(u)
	switch {
	case ci < 0 && ui < 0:
		return 0
	case ci < 0:
		return ui
	case ui < 0:
		return ci
	}
	return min(ci, ui)
}

// shutdownInner ends an intercepted tunnel between two requests at once,
// and after the request under way otherwise; ctx bounds the wait.
func (t *tunnel) shutdownInner(ctx context.Context) {
	t.mu.Lock()
	srv := t.inner
	t.mu.Unlock()
	if srv != nil {
		srv.Shutdown(ctx)
	}
}

// tunnelSet tracks open tunnels for draining, the idle reaper and tests.
type tunnelSet struct {
	mu     sync.Mutex
	m      map[*tunnel]struct{}
	wg     sync.WaitGroup
	reaper bool
	closed bool // draining: no new tunnels
}

// add registers a new tunnel; nil once the set is draining.
func (ts *tunnelSet) add() *tunnel {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil
	}
	if ts.m == nil {
		ts.m = map[*tunnel]struct{}{}
	}
	t := &tunnel{}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	ts.m[t] = struct{}{}
	ts.wg.Add(1)
	return t
}

// drain refuses new tunnels from now on.
func (ts *tunnelSet) drain() {
	ts.mu.Lock()
	ts.closed = true
	ts.mu.Unlock()
}

func (ts *tunnelSet) remove(t *tunnel) {
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

func (ts *tunnelSet) snapshot() []*tunnel {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]*tunnel, 0, len(ts.m))
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

// runTunnel dials the checked addresses, answers the client and relays bytes
// both ways: client to target in the calling goroutine, target to client in
// another. It returns when the tunnel has ended and its audit line is
// written.
func (s *Server) runTunnel(t *tunnel, client net.Conn, addrs []netip.Addr, rec *record) {
	defer func() {
		t.cancel()
		s.tunnels.remove(t)
	}()
	var early []byte
	if pc, ok := client.(*prefixConn); ok {
		client, early = pc.Conn, pc.prefix
	}
	up, err := dialFirst(t.ctx, addrs, rec.port, s.opts.DialTimeout)
	if err != nil {
		rec.err = "dial: " + err.Error()
		s.log(rec)
		writeRaw(client, http.StatusBadGateway, s.refusal(http.StatusBadGateway, rec))
		client.Close()
		return
	}
	if ra, ok := up.RemoteAddr().(*net.TCPAddr); ok {
		rec.ip = ra.IP.String()
	}
	if err := s.opened(rec); err != nil { // before any of the target's bytes can reach the client
		up.Close()
		rec.err = "audit log: " + err.Error()
		s.log(rec)
		writeRaw(client, http.StatusBadGateway, s.refusal(http.StatusBadGateway, rec))
		client.Close()
		return
	}
	if !t.attach(client, up) {
		up.Close()
		s.refuseShuttingDown(client, rec)
		return
	}
	if len(early) > 0 { // closing the tunnel (shutdown) ends this write too
		up.SetWriteDeadline(time.Now().Add(s.opts.DialTimeout))
		if _, err := up.Write(early); err != nil {
			t.close()
			rec.err = "write to target: " + err.Error()
			s.log(rec)
			return
		}
		up.SetWriteDeadline(time.Time{})
		rec.up = int64(len(early))
	}
	if !s.established(t, client, rec) {
		return
	}
	s.ensureReaper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.down = pipe(client, up, &t.ended)
	}()
	rec.up += pipe(up, client, &t.ended)
	<-done
	t.close()
	s.log(rec) // before remove: Shutdown flushes the audit log once every tunnel is gone
}

// established tells the client its tunnel is open; false (the tunnel
// closed, its line written) when the client is gone.
func (s *Server) established(t *tunnel, client net.Conn, rec *record) bool {
	client.SetWriteDeadline(time.Now().Add(s.opts.DialTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		t.close()
		rec.err = "client went away"
		s.log(rec)
		return false
	}
	client.SetWriteDeadline(time.Time{})
	return true
}

// refuseShuttingDown answers a tunnel the closing proxy will not open.
func (s *Server) refuseShuttingDown(client net.Conn, rec *record) {
	rec.err = "proxy shutting down"
	s.log(rec)
	writeRaw(client, http.StatusServiceUnavailable, s.refusal(http.StatusServiceUnavailable, rec))
	client.Close()
}

// pipe copies src to dst until EOF or error, then half-closes dst (or closes
// both on error) and returns the byte count. The direction that ends second
// closes both at once.
//
// Between TCP and unix sockets on Linux, io.Copy moves the bytes with
// splice(2) through a kernel pipe (taken from the runtime's pool for the
// copy): no byte passes through the proxy's own memory, and an idle tunnel's
// pipes hold no data.
func pipe(dst, src net.Conn, ended *atomic.Int32) int64 {
	n, err := io.Copy(dst, src)
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

// prefixConn is a client connection with bytes the HTTP server read behind
// the CONNECT head (already in its buffer when the connection was hijacked):
// they are sent to the target before the relay starts.
type prefixConn struct {
	net.Conn
	prefix []byte
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
		every := max(s.opts.IdleTimeout/4, 100*time.Millisecond)
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
