//go:build linux

package egress

// Event loops for CONNECT tunnels (Linux).
//
// A tunnel served by goroutines costs, besides the sockets' own work, Go's
// netpoller bookkeeping on every socket (an epoll_ctl to add and one to
// remove it, getsockname and getpeername for addresses nobody asks for) and
// goroutine wake-ups across threads at every step. On this project's
// virtualised machines each system call and each wake-up is dear, and that
// overhead was most of what separated the proxy from the new-tunnel rate it
// is asked for (docs/egress.md, "Performance").
//
// So on Linux the proxy runs a few event loops (one OS thread each). Each
// owns an epoll set holding a duplicate of the listening socket (shared
// between loops with EPOLLEXCLUSIVE) and every socket of the connections it
// accepted, registered once, edge-triggered. A loop accepts, reads the first
// request head, decides it with the same functions as every other path
// (parseConnectHead, connectDecisionWith: auth, normalise, policy, cached
// DNS, address guard), dials the checked address with a non-blocking
// connect, answers, and relays bytes through one buffer of its own. What it
// does not serve itself it hands, with the bytes already read, to the
// goroutine path (serveConn) as a net.Conn:
//
//   - a head that is not a plain CONNECT (net/http and goproxy take it);
//   - an allowed name whose addresses are not in the DNS cache (a lookup
//     may wait; a loop never does).
//
// A loop's sockets are only ever touched, and closed, on its own thread;
// other goroutines (Shutdown, the tunnel set) post requests to it through an
// eventfd. Every epoll registration carries the connection's generation
// next to its fd, so an event for a socket closed earlier in the same batch
// is never taken for one that reused the number.

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loopGroup is the server's running event loops (none: the goroutine path).
type loopGroup struct {
	mu      sync.Mutex
	loops   []*evLoop
	stopped bool
	lfd     int  // the group's own duplicate of the listening socket (stopAccepting shuts it)
	hasLfd  bool // lfd is open
}

// Connection states.
const (
	stHead       uint8 = iota // reading the first request head
	stWait                    // client whose upstream is being dialled
	stConnecting              // upstream socket, connect in progress
	stRelay                   // tunnel established, relaying
)

const (
	loopAcceptBatch = 1   // accepts per wake-up (see accept)
	loopPumpMax     = 8   // reads per direction per turn (fairness between tunnels)
	loopEvents      = 256 // epoll events per wait
	loopDefaultMax  = 4   // default loops: GOMAXPROCS, at most this many
	loopSweepMax    = 250 * time.Millisecond
	loopSweepMin    = 10 * time.Millisecond
	loopAuditMax    = 64 << 10         // batch size that is sent at once
	loopYield       = time.Millisecond // a loop gives way to the scheduler this often (run)

	// loopBufSize is a loop's read buffer. Bigger than a goroutine tunnel's
	// (relayBufSize): a loop has one for all its tunnels, and reading a fast
	// sender in bigger pieces takes fewer system calls per byte (measured:
	// about +5% bulk throughput at 512 KiB or 1 MiB over 128 KiB;
	// docs/egress.md).
	loopBufSize = 512 << 10

	spliceFrom = 64 << 10 // a read this big switches its direction to splice
)

// Pending bytes (what a slow receiver could not take yet) are kept in a
// buffer of the smallest of two sizes that holds them: most leftovers fit
// relayBufSize, so a stalled tunnel seldom holds a loop-sized buffer.
var bigPendBufs = sync.Pool{New: func() any { b := make([]byte, loopBufSize); return &b }}

func getPendBuf(n int) *[]byte {
	if n <= relayBufSize {
		return getRelayBuf()
	}
	relayBufsOut.Add(1)
	return bigPendBufs.Get().(*[]byte)
}

func putPendBuf(b *[]byte) {
	if len(*b) <= relayBufSize {
		putRelayBuf(b)
		return
	}
	relayBufsOut.Add(-1)
	bigPendBufs.Put(b)
}

// loopAuditWait is the longest an audit line waits in a loop's batch (a
// variable for tests).
var loopAuditWait = 20 * time.Millisecond

var established200 = []byte("HTTP/1.1 200 Connection established\r\n\r\n")

type evLoop struct {
	s       *Server
	fl      *fastListener
	ep      int // epoll set
	lfd     int // this loop's duplicate of the listening socket; -1 once stopped
	efd     int // eventfd: requests posted by other goroutines
	conns   map[int32]*evConn
	gen     uint32
	buf     []byte // relay buffer, used between a read and its write only
	pipe    [2]int // splice pipe (read end, write end), empty between turns; -1: read and write instead
	evs     []unix.EpollEvent
	ready   []*evConn // sources to pump again (turn ended at loopPumpMax)
	base    time.Time
	now     int64 // monotonic ns since base, at the last wake-up
	sweep   int64 // interval between deadline sweeps, ns
	next    int64 // next sweep
	paused  int64 // accepting paused until (EMFILE and kin), 0: not paused
	delay   time.Duration
	stopped bool // no more accepting; exit once the last connection is gone

	noDelaySet bool // accepted sockets inherit TCP_NODELAY from the listener

	// Audit lines gathered since auditAt, sent to the writer in one batch
	// (flushAudit) at most loopAuditWait later: a tunnel then costs no
	// channel send and no wake-up of the writer of its own.
	audit   []byte
	auditAt int64

	mu     sync.Mutex // guards reqs and exited (and the eventfd's life)
	reqs   []func()
	exited bool
}

type evConn struct {
	fd       int
	gen      uint32
	state    uint8
	rdEOF    bool // read side reached EOF (peer's write side shut)
	inReady  bool
	splice   bool    // read by splice(2) from now on (pump)
	rdEdge   bool    // stWait: there is something to read (read it once relaying)
	head     *[]byte // stHead: head buffer (headBufs)
	n        int
	deadline int64 // stHead, stConnecting
	remote   string
	t        *evTunnel
	peer     *evConn
	pend     *[]byte // bytes read from peer, not yet written here
	pendOff  int
	pendLen  int
}

// evTunnel is one CONNECT tunnel served by a loop.
type evTunnel struct {
	l          *evLoop
	client, up *evConn
	rec        *record
	addrs      []netip.Addr
	next       int // next address to dial
	lastErr    string
	early      []byte // client bytes that came right behind the head
	last       int64  // last data either way (loop clock)
	registered bool   // in the server's tunnel set
	done       bool
}

// close is called by the tunnel set (Shutdown): the loop closes it.
func (t *evTunnel) close() { t.l.post(func() { t.l.closeTunnel(t) }) }

// idle is 0: a loop reaps its own idle tunnels.
func (t *evTunnel) idle() time.Duration { return 0 }

// DefaultEventLoops is the number of event loops a server starts when
// Options.EventLoops is 0: GOMAXPROCS, at most 4 (0 where there are none).
//
// A loop's thread blocks in epoll_wait while it waits. A process that
// serves with loops does best with one scheduler slot (GOMAXPROCS) more than
// it has loops: the rest of the server (hand-overs, the audit writer,
// reloads, the garbage collector) then runs without taking a loop's slot,
// and the runtime sees a free slot and leaves the waiting loops alone
// instead of taking their slots back every few microseconds (measured: about
// a tenth less CPU per tunnel; docs/egress.md). `hobbs proxy` sets it so.
func DefaultEventLoops() int { return min(runtime.GOMAXPROCS(0), loopDefaultMax) }

// startLoops starts the event loops serving fl's listener; false (the
// caller falls back to goroutines) when the listener is not a TCP socket,
// loops are disabled or cannot be set up.
func (s *Server) startLoops(fl *fastListener) bool {
	tl, ok := fl.Listener.(*net.TCPListener)
	if !ok || s.opts.EventLoops < 0 {
		return false
	}
	n := s.opts.EventLoops
	if n == 0 {
		n = DefaultEventLoops()
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return false
	}
	s.loops.mu.Lock()
	defer s.loops.mu.Unlock()
	if s.loops.stopped {
		return false
	}
	var loops []*evLoop
	for range n {
		l, err := newLoop(s, fl, rc)
		if err != nil {
			s.opts.Logf("event loop: %v; serving with goroutines", err)
			for _, l := range loops {
				l.release()
			}
			return false
		}
		loops = append(loops, l)
	}
	var derr error
	if err := rc.Control(func(fd uintptr) { s.loops.lfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		s.opts.Logf("event loop: dup listener: %v %v; serving with goroutines", err, derr)
		for _, l := range loops {
			l.release()
		}
		return false
	}
	s.loops.hasLfd = true
	// A listener made by Listen has TCP_NODELAY from before it listened,
	// and every socket it accepts inherits it (listenerControl): a system
	// call fewer per tunnel. Other listeners' sockets get it one by one.
	v, err := unix.GetsockoptInt(s.loops.lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	for _, l := range loops {
		l.noDelaySet = err == nil && v != 0
	}
	s.loops.loops = loops
	fl.onClose = s.loops.stopAccepting
	for _, l := range loops {
		go l.run()
	}
	return true
}

func newLoop(s *Server, fl *fastListener, rc syscall.RawConn) (*evLoop, error) {
	l := &evLoop{s: s, fl: fl, ep: -1, lfd: -1, efd: -1, pipe: [2]int{-1, -1}, conns: map[int32]*evConn{},
		buf: make([]byte, loopBufSize), evs: make([]unix.EpollEvent, loopEvents), base: time.Now()}
	var derr error
	if err := rc.Control(func(fd uintptr) { l.lfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup listener: %w", derr)
	}
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		l.release()
		return nil, fmt.Errorf("epoll_create: %w", err)
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		l.release()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	l.newPipe()
	if err := l.ctl(unix.EPOLL_CTL_ADD, l.lfd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE, 0); err != nil {
		l.release()
		return nil, fmt.Errorf("epoll_ctl listener: %w", err)
	}
	if err := l.ctl(unix.EPOLL_CTL_ADD, l.efd, unix.EPOLLIN, 0); err != nil {
		l.release()
		return nil, fmt.Errorf("epoll_ctl eventfd: %w", err)
	}
	o := s.opts
	sweep := min(o.HeaderTimeout, o.DialTimeout, o.IdleTimeout) / 4
	l.sweep = int64(max(loopSweepMin, min(sweep, loopSweepMax)))
	return l, nil
}

// release closes the loop's own descriptors (an unstarted or exiting loop).
func (l *evLoop) release() {
	for _, fd := range []*int{&l.lfd, &l.efd, &l.ep, &l.pipe[0], &l.pipe[1]} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (l *evLoop) ctl(op, fd int, events uint32, gen uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(gen)}
	for {
		_, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(l.ep), uintptr(op), uintptr(fd),
			uintptr(unsafe.Pointer(&ev)), 0, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
		default:
			return e
		}
	}
}

// post runs f on the loop's thread; false if the loop has exited.
func (l *evLoop) post(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.exited {
		return false
	}
	l.reqs = append(l.reqs, f)
	one := [8]byte{1}
	unix.Write(l.efd, one[:])
	return true
}

// stopAccepting makes every loop stop accepting and close the connections
// still sending their first head (as net/http's Shutdown closes idle
// ones); it returns once all have done so. Tunnels and dials go on.
//
// The listening socket is shut first, here: from then on no loop can
// accept and connections not yet accepted are reset, whatever each loop is
// doing. (Before, each loop stopped in turn: a client could see one loop's
// half-read heads closed and still have a new tunnel opened by a loop not
// yet told; and closing the listener does not stop a socket the loops hold
// duplicates of.)
func (g *loopGroup) stopAccepting() {
	g.mu.Lock()
	g.stopped = true
	loops := g.loops
	if g.hasLfd {
		unix.Shutdown(g.lfd, unix.SHUT_RD) // Linux: a listener shut for reading stops listening
		unix.Close(g.lfd)
		g.hasLfd = false
	}
	g.mu.Unlock()
	for _, l := range loops {
		done := make(chan struct{})
		if l.post(func() { l.stopAccept(); close(done) }) {
			<-done
		}
	}
}

func (l *evLoop) stopAccept() {
	if l.stopped {
		return
	}
	l.stopped = true
	l.flushAudit() // from now on every line is sent at once (log)
	if l.lfd >= 0 {
		l.ctl(unix.EPOLL_CTL_DEL, l.lfd, 0, 0)
		unix.Close(l.lfd)
		l.lfd = -1
	}
	for _, c := range l.conns {
		if c.state == stHead {
			l.closeConn(c)
		}
	}
}

func (l *evLoop) clock() { l.now = int64(time.Since(l.base)) }

// run is the loop. It is an ordinary goroutine (not locked to its thread)
// that gives way to the scheduler every loopYield. A loop never parks: it
// waits in epoll_wait, a system call, and so would look to the runtime's
// monitor like one goroutine running without end. The monitor would then
// take its processor back every 10 ms and, having just done so, wake up
// every 20 µs for a while to look again (perf showed it at about a tenth of
// the proxy's CPU). A goroutine that yields now and then is one the monitor
// leaves alone; a locked one would hand its thread over at each yield.
// Measured: about 0.87× the CPU per tunnel of a locked loop that never
// yields (docs/egress.md).
func (l *evLoop) run() {
	l.clock()
	l.next = l.now + l.sweep
	yielded := l.now
	for {
		wake := l.next
		if len(l.audit) > 0 {
			wake = min(wake, l.auditAt+int64(loopAuditWait))
		}
		timeout := max(0, int((wake-l.now+int64(time.Millisecond)-1)/int64(time.Millisecond)))
		if len(l.ready) > 0 {
			timeout = 0
		}
		// Under load events are there already: take them without the
		// runtime's blocking-call bookkeeping; block only when idle.
		n := epollWaitNow(l.ep, l.evs)
		if n == 0 && timeout > 0 {
			var err error
			n, err = unix.EpollWait(l.ep, l.evs, timeout)
			if err != nil && err != unix.EINTR {
				l.s.opts.Logf("event loop: epoll_wait: %v", err)
				time.Sleep(10 * time.Millisecond)
			}
		}
		l.clock()
		for i := 0; i < n; i++ {
			ev := &l.evs[i]
			fd := int(ev.Fd)
			switch {
			case fd == l.efd:
				l.runRequests()
			case fd == l.lfd:
				l.accept()
			default:
				c := l.conns[ev.Fd]
				if c == nil || c.gen != uint32(ev.Pad) {
					continue // closed earlier in this batch
				}
				l.event(c, ev.Events)
			}
		}
		if len(l.ready) > 0 {
			ready := l.ready
			l.ready = nil
			for _, c := range ready {
				c.inReady = false
				if c.t != nil && !c.t.done {
					l.pump(c, c.peer, true)
				}
			}
		}
		if l.now-yielded >= int64(loopYield) {
			yielded = l.now
			runtime.Gosched()
		}
		if l.now >= l.next {
			l.sweepDeadlines()
			l.next = l.now + l.sweep
		}
		if len(l.audit) > 0 && l.now-l.auditAt >= int64(loopAuditWait) {
			l.flushAudit()
		}
		if l.stopped && len(l.conns) == 0 {
			l.flushAudit()
			l.mu.Lock()
			l.exited = true
			reqs := l.reqs
			l.reqs = nil
			l.release()
			l.mu.Unlock()
			for _, f := range reqs { // closes of tunnels already gone
				f()
			}
			return
		}
	}
}

func (l *evLoop) runRequests() {
	var b [8]byte
	sysRead(l.efd, b[:])
	l.mu.Lock()
	reqs := l.reqs
	l.reqs = nil
	l.mu.Unlock()
	for _, f := range reqs {
		f()
	}
}

// add registers a new socket, edge-triggered for everything it can report.
func (l *evLoop) add(fd int, state uint8) (*evConn, error) {
	l.gen++
	c := &evConn{fd: fd, gen: l.gen, state: state}
	if err := l.ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET, c.gen); err != nil {
		return nil, err
	}
	l.conns[int32(fd)] = c
	return c, nil
}

// forget removes c from the loop without closing its socket.
func (l *evLoop) forget(c *evConn) {
	l.ctl(unix.EPOLL_CTL_DEL, c.fd, 0, 0)
	delete(l.conns, int32(c.fd))
	c.putBuffers()
}

// putBuffers returns the head and pending-bytes buffers c holds.
func (c *evConn) putBuffers() {
	if c.head != nil {
		headBufs.Put(c.head)
		c.head = nil
	}
	if c.pend != nil {
		putPendBuf(c.pend)
		c.pend = nil
	}
}

// closeConn closes one socket (closing removes it from the epoll set).
func (l *evLoop) closeConn(c *evConn) {
	if c.fd < 0 {
		return
	}
	delete(l.conns, int32(c.fd))
	sysClose(c.fd)
	c.fd = -1
	c.putBuffers()
}

// accept accepts loopAcceptBatch connections at most. The listener is
// level-triggered: one still waiting is reported again at the next
// epoll_wait, which the loop makes anyway. Accepting one per wake-up saves
// the accept that finds none left (EAGAIN) — about a third of a system call
// per tunnel at the bench's 16 clients (measured: +2% tunnels/s, within
// the noise; docs/egress.md).
func (l *evLoop) accept() {
	if l.lfd < 0 || l.paused != 0 {
		return
	}
	for range loopAcceptBatch {
		fd, peer, err := sysAccept(l.lfd)
		switch err {
		case 0:
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EINVAL: // the listener was shut (stopAccepting): stop watching it
			l.ctl(unix.EPOLL_CTL_DEL, l.lfd, 0, 0)
			unix.Close(l.lfd)
			l.lfd = -1
			return
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// out of descriptors or memory: stop listening for a while, as
			// net/http backs off (level-triggered, it would spin)
			if l.delay == 0 {
				l.delay = 5 * time.Millisecond
			} else if l.delay *= 2; l.delay > time.Second {
				l.delay = time.Second
			}
			l.s.opts.Logf("accept: %v; retrying in %v", err, l.delay)
			l.ctl(unix.EPOLL_CTL_DEL, l.lfd, 0, 0)
			l.paused = l.now + int64(l.delay)
			l.next = min(l.next, l.paused)
			return
		default:
			l.s.opts.Logf("accept: %v", err)
			return
		}
		l.delay = 0
		if !l.noDelaySet {
			sysNoDelay(fd)
		}
		c, aerr := l.add(fd, stHead)
		if aerr != nil {
			sysClose(fd)
			continue
		}
		c.remote = peer.String()
		c.deadline = l.now + int64(l.s.opts.HeaderTimeout)
		c.head = headBufs.Get().(*[]byte)
	}
}

func (l *evLoop) event(c *evConn, ev uint32) {
	const readable = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR
	const writable = unix.EPOLLOUT | unix.EPOLLHUP | unix.EPOLLERR
	switch c.state {
	case stHead:
		if ev&readable != 0 {
			l.readHead(c, ev)
		}
	case stWait:
		// The client's events wait until its tunnel is established; then it
		// is read if an edge came meanwhile (readHead left it drained).
		c.rdEdge = c.rdEdge || ev&readable != 0
	case stConnecting:
		if ev&writable != 0 {
			l.connected(c, ev)
		}
	case stRelay:
		t := c.t
		if ev&writable != 0 && c.pend != nil {
			l.flush(c)
		}
		if ev&readable != 0 && !t.done {
			l.pump(c, c.peer, ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
		}
	}
}

// readHead reads the first request head, as serveConn does. It stops
// reading where the head is complete. What may be left in the socket then
// — bytes beyond a read that filled the buffer, or the client's end when
// the event (ev) reported one already — gets no edge of its own:
// connectHead notes that the client is to be read once the tunnel is up.
func (l *evLoop) readHead(c *evConn, ev uint32) {
	buf := *c.head
	for {
		m, err := sysRead(c.fd, buf[c.n:])
		filled := m == len(buf)-c.n
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != 0 || m == 0:
			l.closeConn(c) // reset or EOF before a whole head: no answer
			return
		}
		c.n += m
		if !isPrefixOf(buf[:c.n], connectPrefix) {
			l.handOver(c) // not a CONNECT: net/http's
			return
		}
		if c.n >= len(connectPrefix) {
			if e, crlf := connectHeadEnd(buf[:c.n]); e >= 0 {
				if !crlf {
					l.handOver(c)
				} else {
					l.connectHead(c, e, filled || ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
				}
				return
			}
		}
		if c.n == len(buf) {
			l.handOver(c) // too big for the fast path
			return
		}
	}
}

// handOver gives c, with the bytes read so far, to the goroutine path.
func (l *evLoop) handOver(c *evConn) {
	pre := append([]byte(nil), (*c.head)[:c.n]...)
	l.forget(c)
	f := os.NewFile(uintptr(c.fd), "")
	c.fd = -1
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		l.s.opts.Logf("event loop: hand-over: %v", err)
		return
	}
	if !l.s.pending.add(nc) {
		nc.Close()
		return
	}
	l.s.handOvers.Add(1)
	go l.s.serveConn(l.fl, nc, pre)
}

func (l *evLoop) connectHead(c *evConn, end int, unread bool) {
	buf := *c.head
	var h connectHead
	if !parseConnectHead(buf[:end], &h) {
		l.handOver(c)
		return
	}
	rec := &record{start: time.Now(), client: c.remote, method: http.MethodConnect}
	addrs, code := l.s.connectDecisionWith(rec, h.target, h.auth, h.authCount, !l.s.opts.loopLookups)
	if code == needLookup {
		l.handOver(c) // decided again where a lookup may wait
		return
	}
	if code != 0 {
		l.log(rec)
		sysWrite(c.fd, refusalBytes(code, refusal(code, rec))) // a fresh socket's buffer holds it
		l.closeConn(c)
		return
	}
	if !l.s.pending.addDecided() { // shutting down: treat as never read
		l.closeConn(c)
		return
	}
	t := &evTunnel{l: l, client: c, rec: rec, addrs: addrs}
	if end < c.n {
		t.early = append([]byte(nil), buf[end:c.n]...)
	}
	headBufs.Put(c.head)
	c.head = nil
	c.t = t
	c.state = stWait
	c.rdEdge = unread
	l.dial(t)
}

// dial starts a non-blocking connect to the next checked address.
func (l *evLoop) dial(t *evTunnel) {
	for t.next < len(t.addrs) {
		a := t.addrs[t.next]
		t.next++
		ap := netip.AddrPortFrom(a, uint16(t.rec.port))
		fd, op, errno := sysConnectStart(ap)
		if errno != 0 {
			t.dialFailed(op + ": " + errno.Error())
			continue
		}
		u, err := l.add(fd, stConnecting)
		if err != nil {
			sysClose(fd)
			t.dialFailed("epoll_ctl: " + err.Error())
			continue
		}
		u.t, u.peer, t.client.peer, t.up = t, t.client, u, u
		u.deadline = l.now + int64(l.s.opts.DialTimeout)
		t.rec.ip = a.String()
		return
	}
	// every address failed: 502, as the goroutine path answers
	rec := t.rec
	rec.err = "dial: " + t.lastErr
	l.s.pending.doneDecided()
	l.log(rec)
	sysWrite(t.client.fd, refusalBytes(http.StatusBadGateway, refusal(http.StatusBadGateway, rec)))
	t.done = true
	l.closeConn(t.client)
}

// dialFailed records why the address last tried failed, in the words of
// Go's dialer (the goroutine path's 502 says the same).
func (t *evTunnel) dialFailed(why string) {
	t.lastErr = "dial tcp " + netip.AddrPortFrom(t.addrs[t.next-1], uint16(t.rec.port)).String() + ": " + why
}

// connected runs when an upstream connect completes or fails (ev: the
// event that said so). A failed connect reports EPOLLERR or EPOLLHUP; only
// then is the socket asked why.
func (l *evLoop) connected(u *evConn, ev uint32) {
	t := u.t
	if ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		if err := sysSoError(u.fd); err != 0 {
			t.dialFailed("connect: " + err.Error())
			l.closeConn(u)
			t.up = nil
			l.dial(t)
			return
		}
	}
	l.s.pending.doneDecided()
	if !l.s.tunnels.add(t) {
		t.rec.err = "proxy shutting down"
		l.log(t.rec)
		sysWrite(t.client.fd, refusalBytes(http.StatusServiceUnavailable, "hobbs proxy: shutting down\n"))
		t.done = true
		l.closeConn(u)
		l.closeConn(t.client)
		return
	}
	t.registered = true
	l.s.loopTunnels.Add(1)
	c := t.client
	if n, err := sysWrite(c.fd, established200); err != 0 || n != len(established200) {
		t.rec.err = "client went away"
		l.closeTunnel(t)
		return
	}
	c.state, u.state = stRelay, stRelay
	t.last = l.now
	if len(t.early) > 0 {
		l.send(u, t.early)
		t.early = nil
		if t.done {
			return
		}
	}
	// Each side is read now only if it has something: the client if an
	// edge came while it waited, the upstream if it was readable already
	// when the connect completed (a server that speaks first). Later bytes
	// bring edges of their own.
	if c.rdEdge {
		l.pump(c, u, true)
	}
	if !t.done && ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.pump(u, c, true)
	}
}

// send writes p to dst, keeping what does not fit as dst's pending bytes.
func (l *evLoop) send(dst *evConn, p []byte) {
	w, err := writeNB(dst.fd, p)
	l.count(dst, w)
	if err != 0 {
		l.closeTunnel(dst.t)
		return
	}
	if w < len(p) {
		dst.pend = getPendBuf(len(p) - w)
		dst.pendOff, dst.pendLen = 0, copy(*dst.pend, p[w:])
	}
}

// count adds n bytes written to dst to the audit record.
func (l *evLoop) count(dst *evConn, n int) {
	if dst == dst.t.up {
		dst.t.rec.up += int64(n)
	} else {
		dst.t.rec.down += int64(n)
	}
}

// writeNB writes as much of p as the socket takes now.
func writeNB(fd int, p []byte) (int, syscall.Errno) {
	done := 0
	for done < len(p) {
		n, err := sysWrite(fd, p[done:])
		switch err {
		case 0:
			done += n
		case unix.EINTR:
		case unix.EAGAIN:
			return done, 0
		default:
			return done, err
		}
	}
	return done, 0
}

// pump moves src's bytes to dst until src has nothing more, dst is full
// (its pending bytes wait for room; src is read again once they are
// written) or this turn's share is used up.
//
// Without toEnd, a read that returns less than asked for ends the turn: the
// socket was empty then, and what arrives later brings an edge of its own
// (edge-triggered: an event returned by epoll_wait is re-armed by the next
// arrival). Callers pass toEnd when an end may be waiting that no edge will
// announce again: the event reported the peer's shutdown (EPOLLRDHUP: the
// EOF must be read), or the turn did not start from an event.
func (l *evLoop) pump(src, dst *evConn, toEnd bool) {
	t := src.t
	if src.rdEOF || dst.pend != nil || t.done {
		return
	}
	for range loopPumpMax {
		// A direction that carries bulk (a read of spliceFrom bytes or more
		// switched it) goes from socket to socket through the loop's pipe
		// with splice(2), without a copy through user space: measured in
		// the bench (6 interleaved rounds), 1.22× the bulk throughput of
		// read and write. Short tunnels never switch (splicing their few
		// bytes cost about 3% more CPU per tunnel).
		spliced := src.splice && l.pipe[0] >= 0
		var m int
		var err syscall.Errno
		if spliced {
			m, err = sysSplice(src.fd, l.pipe[1], loopBufSize)
		} else {
			m, err = sysRead(src.fd, l.buf)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err == unix.EINVAL && spliced: // a socket splice does not take
			src.splice = false
			continue
		case err != 0:
			l.closeTunnel(t)
			return
		case m == 0:
			src.rdEOF = true
			if dst.rdEOF { // the other way ended first: close both at once
				l.closeTunnel(t)
				return
			}
			sysShutdownWrite(dst.fd)
			return
		}
		t.last = l.now
		if spliced {
			l.spliceOut(dst, m)
		} else {
			src.splice = m >= spliceFrom
			l.send(dst, l.buf[:m])
		}
		if t.done || dst.pend != nil || m < loopBufSize && !toEnd {
			return
		}
	}
	if !src.inReady { // more may be waiting: the edge is spent, come back
		src.inReady = true
		l.ready = append(l.ready, src)
	}
}

// newPipe makes the loop's splice pipe (none: the loop reads and writes).
func (l *evLoop) newPipe() {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, loopBufSize); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return
	}
	l.pipe = p
}

// dropPipe closes a pipe that may hold bytes and makes a new one: a
// tunnel's bytes must never reach another tunnel.
func (l *evLoop) dropPipe() {
	unix.Close(l.pipe[0])
	unix.Close(l.pipe[1])
	l.pipe = [2]int{-1, -1}
	l.newPipe()
}

// spliceOut moves the m bytes in the pipe to dst. The pipe is empty
// whenever a turn ends: what dst cannot take now is read out of it into
// dst's pending bytes, and a pipe whose bytes could not be delivered (dst
// reset) is closed and replaced, so no tunnel's bytes can reach another.
func (l *evLoop) spliceOut(dst *evConn, m int) {
	left := m
	for left > 0 {
		w, err := sysSplice(l.pipe[0], dst.fd, left)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != 0 {
			l.dropPipe()
			l.closeTunnel(dst.t)
			return
		}
		left -= w
		l.count(dst, w)
		l.s.splicedBytes.Add(int64(w))
	}
	if left == 0 {
		return
	}
	dst.pend = getPendBuf(left)
	n, err := sysRead(l.pipe[0], (*dst.pend)[:left])
	if err != 0 || n != left {
		l.dropPipe()
		l.closeTunnel(dst.t)
		return
	}
	dst.pendOff, dst.pendLen = 0, left
}

func sysSplice(from, to, n int) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(unix.SYS_SPLICE, uintptr(from), 0, uintptr(to), 0, uintptr(n),
		unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	return int(r), e
}

// flush writes dst's pending bytes; once all are out, src is read again.
func (l *evLoop) flush(dst *evConn) {
	p := (*dst.pend)[dst.pendOff:dst.pendLen]
	w, err := writeNB(dst.fd, p)
	l.count(dst, w)
	dst.pendOff += w
	if w > 0 {
		dst.t.last = l.now // a slow reader draining a big answer is not idle
	}
	if err != 0 {
		l.closeTunnel(dst.t)
		return
	}
	if dst.pendOff < dst.pendLen {
		return
	}
	putPendBuf(dst.pend)
	dst.pend = nil
	l.pump(dst.peer, dst, true)
}

// closeTunnel closes both sockets and writes the audit line.
func (l *evLoop) closeTunnel(t *evTunnel) {
	if t.done {
		return
	}
	t.done = true
	l.closeConn(t.client)
	if t.up != nil {
		l.closeConn(t.up)
	}
	if t.registered {
		l.log(t.rec) // before remove: Shutdown flushes the audit log once every tunnel is gone
		l.s.tunnels.remove(t)
	}
}

// log writes rec's audit line: into the loop's batch, or straight to the
// writer once the loop has stopped accepting (Shutdown then flushes the
// audit log as soon as the last tunnel is gone, and must find every line
// there).
func (l *evLoop) log(rec *record) {
	if l.stopped {
		l.s.log(rec)
		return
	}
	if len(l.audit) == 0 {
		l.auditAt = l.now
	}
	line := l.s.auditLine(rec)
	l.audit = l.s.audit.appendLine(l.audit, &line)
	if len(l.audit) >= loopAuditMax {
		l.flushAudit()
	}
}

// flushAudit hands the gathered lines to the writer.
func (l *evLoop) flushAudit() {
	if len(l.audit) == 0 {
		return
	}
	l.s.audit.send(l.audit)
	l.audit = nil // the writer owns the batch now
}

// sweepDeadlines closes heads past the header timeout, moves dials past
// the dial timeout on to the next address, reaps idle tunnels and resumes
// accepting after a pause.
func (l *evLoop) sweepDeadlines() {
	if l.paused != 0 && l.now >= l.paused && l.lfd >= 0 {
		l.paused = 0
		if l.pipe[0] < 0 { // lost to the same shortage: bulk can splice again
			l.newPipe()
		}
		if err := l.ctl(unix.EPOLL_CTL_ADD, l.lfd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE, 0); err != nil {
			l.s.opts.Logf("event loop: listener: %v", err)
		}
	}
	idle := int64(l.s.opts.IdleTimeout)
	for _, c := range l.conns {
		switch c.state {
		case stHead:
			if l.now >= c.deadline {
				l.closeConn(c) // slowloris: no answer, as net/http
			}
		case stConnecting:
			if l.now >= c.deadline {
				t := c.t
				t.dialFailed("i/o timeout")
				l.closeConn(c)
				t.up = nil
				l.dial(t)
			}
		case stRelay:
			if t := c.t; c == t.client && !t.done && l.now-t.last >= idle {
				l.closeTunnel(t)
			}
		}
	}
}

// The loop's system calls on non-blocking sockets are made raw: they cannot
// block, so the runtime need not prepare to hand the loop's P to another
// thread meanwhile (see rawRead). x/sys's Accept4 would also ask the
// listening socket's protocol on every call.

func sysRead(fd int, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

func sysWrite(fd int, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

func sysClose(fd int) { syscall.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }

func sysShutdownWrite(fd int) {
	syscall.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0)
}

// listenerControl sets TCP_NODELAY on a TCP socket before it listens (a
// net.ListenConfig Control): Linux copies a listener's options into every
// socket it accepts, so the event loops need not set it on each.
func listenerControl(network, _ string, rc syscall.RawConn) error {
	if !strings.HasPrefix(network, "tcp") {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}); err != nil {
		return err
	}
	return serr
}

func sysNoDelay(fd int) {
	one := int32(1)
	syscall.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY,
		uintptr(unsafe.Pointer(&one)), 4, 0)
}

func sysSoError(fd int) syscall.Errno {
	var v int32
	l := uint32(4)
	_, _, e := syscall.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return syscall.Errno(v)
}

// sysAccept accepts one connection (non-blocking, close-on-exec) and
// returns its peer address.
func sysAccept(lfd int) (int, netip.AddrPort, syscall.Errno) {
	var sa unix.RawSockaddrAny
	l := uint32(unsafe.Sizeof(sa))
	r, _, e := syscall.RawSyscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(&sa)),
		uintptr(unsafe.Pointer(&l)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	var ap netip.AddrPort
	switch sa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
		ap = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), ntohs(a.Port))
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(&sa))
		ap = netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), ntohs(a.Port))
	}
	return int(r), ap, 0
}

// sysConnectStart creates a non-blocking TCP socket and starts connecting
// it to ap.
func sysConnectStart(ap netip.AddrPort) (int, string, syscall.Errno) {
	a := ap.Addr()
	family := unix.AF_INET6
	if a.Is4() {
		family = unix.AF_INET
	}
	r, _, e := syscall.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, "socket", e
	}
	fd := int(r)
	sysNoDelay(fd)
	var sa4 unix.RawSockaddrInet4
	var sa6 unix.RawSockaddrInet6
	var p unsafe.Pointer
	var l uintptr
	if a.Is4() {
		sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: htons(ap.Port()), Addr: a.As4()}
		p, l = unsafe.Pointer(&sa4), unsafe.Sizeof(sa4)
	} else {
		sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: htons(ap.Port()), Addr: a.As16()}
		p, l = unsafe.Pointer(&sa6), unsafe.Sizeof(sa6)
	}
	_, _, e = syscall.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), l)
	if e != 0 && e != unix.EINPROGRESS && e != unix.EINTR {
		sysClose(fd)
		return -1, "connect", e
	}
	return fd, "", 0
}

// htons/ntohs: the port field of a raw socket address is in network order.
func htons(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1]) // read back in host order: swapped on little-endian
}

func ntohs(p uint16) uint16 { return htons(p) }

// epollWaitNow returns the events ready now, without blocking.
func epollWaitNow(ep int, evs []unix.EpollEvent) int {
	r, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])),
		uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	return int(r)
}
