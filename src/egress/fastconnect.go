package egress

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The CONNECT fast path. Almost every connection the agent opens is one
// CONNECT tunnel; serving those through net/http and goproxy (server conn
// setup, request parsing into maps, ResponseWriter, hijack) costs more CPU
// than the checks themselves. So the proxy reads the first request head of
// each connection itself:
//
//   - a well-formed CONNECT head that fits in connHeadMax bytes is decided
//     here, by the same functions as the goproxy path (authorizedValue,
//     connectDecision, decide, startTunnel);
//   - anything else — another method, HTTP/2, an odd or oversized head, a
//     header the fast parser does not take (obs-fold, bad bytes, a body) —
//     is handed to the net/http server with the bytes already read
//     replayed, exactly as if it had read them itself.
//
// The fast parser only ever says "yes, this simple head" or "not mine", so
// every input it does not fully understand meets the older, net/http path.

// connHeadMax bounds the head the fast path reads; bigger heads go to
// net/http (which allows up to MaxHeaderBytes).
const connHeadMax = 4096

var headBufs = sync.Pool{New: func() any { b := make([]byte, connHeadMax); return &b }}

var connectPrefix = []byte("CONNECT ")

// fastListener yields to the net/http server the connections the fast path
// handed over.
type fastListener struct {
	net.Listener
	ch      chan net.Conn
	done    chan struct{}
	closed  sync.Once
	onClose func() // event loops: stop accepting too
}

func (l *fastListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *fastListener) Close() error {
	err := net.ErrClosed
	l.closed.Do(func() {
		close(l.done)
		err = l.Listener.Close()
		if l.onClose != nil {
			l.onClose()
		}
	})
	return err
}

// handOff gives c to the net/http server; false when it is shutting down.
func (l *fastListener) handOff(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// acceptLoop accepts clients and reads each first head in its own
// goroutine. Temporary accept errors (EMFILE) back off as net/http does.
func (s *Server) acceptLoop(fl *fastListener) {
	var delay time.Duration
	for {
		c, err := fl.Listener.Accept()
		if err != nil {
			select {
			case <-fl.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				fl.Close()
				return
			}
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.opts.Logf("accept: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if !s.pending.add(c) {
			c.Close()
			continue
		}
		go s.serveConn(fl, c, nil)
	}
}

// serveConn reads c's first request head within the header timeout and
// serves it on the fast path or hands c to net/http. pre holds bytes of the
// head already read from c (by an event loop handing c over), at most
// connHeadMax.
func (s *Server) serveConn(fl *fastListener, c net.Conn, pre []byte) {
	bp := headBufs.Get().(*[]byte)
	buf := *bp
	n, end, isConnect := copy(buf, pre), -1, true
	c.SetReadDeadline(time.Now().Add(s.opts.HeaderTimeout))
	var rerr error
	for {
		if isConnect && !isPrefixOf(buf[:n], connectPrefix) {
			isConnect = false
		}
		if isConnect && n >= len(connectPrefix) {
			if e, crlf := connectHeadEnd(buf[:n]); e >= 0 {
				end = e
				isConnect = crlf // bare-LF line ends: net/http's to judge
				break
			}
		}
		if !isConnect || n == len(buf) {
			break // not ours, or too big for the fast path
		}
		if rerr != nil {
			// timeout (slowloris), reset or EOF before a whole head: what
			// net/http does too, close without an answer
			s.pending.done(c)
			headBufs.Put(bp)
			c.Close()
			return
		}
		var m int
		m, rerr = c.Read(buf[n:])
		n += m
	}
	var h connectHead
	ok := isConnect && end >= 0 && parseConnectHead(buf[:end], &h)
	if !ok {
		// net/http re-arms its own deadlines
		c.SetReadDeadline(time.Time{})
		rc := &replayConn{Conn: c, pending: append([]byte(nil), buf[:n]...)}
		headBufs.Put(bp)
		s.pending.done(c)
		if !fl.handOff(rc) {
			c.Close()
		}
		return
	}
	if !s.pending.decided(c) { // shutting down: treat as never read
		s.pending.done(c)
		headBufs.Put(bp)
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	client := c
	if rest := buf[end:n]; len(rest) > 0 { // early data right behind the head
		client = &replayConn{Conn: c, pending: append([]byte(nil), rest...)}
	}
	rec := &record{start: time.Now(), client: c.RemoteAddr().String(), method: http.MethodConnect}
	addrs, code := s.connectDecision(rec, h.target, h.auth, h.authCount)
	headBufs.Put(bp)
	if code != 0 {
		s.pending.done(c)
		s.log(rec)
		writeRaw(c, code, refusal(code, rec))
		c.Close()
		return
	}
	s.startTunnel(client, addrs, rec, func() { s.pending.done(c) })
}

func isPrefixOf(b, prefix []byte) bool {
	if len(b) > len(prefix) {
		b = b[:len(prefix)]
	}
	return bytes.Equal(b, prefix[:len(b)])
}

// connectHeadEnd returns the length of the head including the blank line
// that ends it, or -1, and whether that blank line is CRLF after a CRLF
// (heads using bare "\n" go to net/http).
func connectHeadEnd(b []byte) (int, bool) {
	e, skip := headEnd(b)
	if e < 0 {
		return -1, false
	}
	return e + skip, skip == 2 && e >= 2 && b[e-2] == '\r'
}

// connectHead is what the fast path takes from a CONNECT head.
type connectHead struct {
	target    string // request-target, raw (checked by connectDecision)
	auth      string // Proxy-Authorization value
	authCount int
}

// parseConnectHead accepts only the plain form of a CONNECT head:
// "CONNECT target HTTP/1.x", then "Name: value" lines with token names and
// values free of control bytes, at most one valid Host (net/http does not
// require one on CONNECT), no body framing headers, each line ending in CRLF. Anything else
// returns false and goes to net/http.
func parseConnectHead(head []byte, h *connectHead) bool {
	i := bytes.Index(head, []byte("\r\n"))
	line := head[:i]
	rest := head[i+2:]
	line = line[len(connectPrefix):]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	target, proto := line[:sp], line[sp+1:]
	if string(proto) != "HTTP/1.1" && string(proto) != "HTTP/1.0" {
		return false
	}
	for _, b := range target {
		if b <= ' ' || b >= 0x7f {
			return false
		}
	}
	h.target = string(target)
	hosts := 0
	for len(rest) > 2 { // the head ends with the blank line's "\r\n"
		j := bytes.Index(rest, []byte("\r\n"))
		l := rest[:j]
		rest = rest[j+2:]
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 {
			return false
		}
		name := l[:colon]
		for _, b := range name {
			if !httpguts.IsTokenRune(rune(b)) {
				return false
			}
		}
		value := bytes.Trim(l[colon+1:], " \t")
		for _, b := range value {
			if (b < ' ' && b != '\t') || b == 0x7f {
				return false
			}
		}
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			if hosts > 1 || !httpguts.ValidHostHeader(string(value)) {
				return false
			}
		case asciiEqualFold(name, "Proxy-Authorization"):
			h.authCount++
			h.auth = string(value)
		case asciiEqualFold(name, "Content-Length"), asciiEqualFold(name, "Transfer-Encoding"):
			return false
		}
	}
	return true
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// replayConn reads first the bytes already read from the connection, then
// from the connection.
type replayConn struct {
	net.Conn
	pending []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		if len(r.pending) == 0 {
			r.pending = nil
		}
		return n, nil
	}
	return r.Conn.Read(p)
}

// NetConn returns the underlying connection (for the idle reaper).
func (r *replayConn) NetConn() net.Conn { return r.Conn }

func (r *replayConn) CloseWrite() error {
	if cw, ok := r.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// pendingSet tracks fast-path connections until their tunnel is registered,
// so that Shutdown can close the ones still reading a head (idle, as
// net/http's Shutdown treats them) and wait for the ones being decided, as
// it waits for active requests.
type pendingSet struct {
	mu     sync.Mutex
	m      map[net.Conn]bool // true: still reading the head
	wg     sync.WaitGroup
	closed bool
}

func (p *pendingSet) add(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.m == nil {
		p.m = map[net.Conn]bool{}
	}
	p.m[c] = true
	p.wg.Add(1)
	return true
}

// decided marks c's head as read; false when Shutdown got there first.
func (p *pendingSet) decided(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.m[c] = false
	return true
}

// addDecided counts a connection an event loop has decided and not yet
// registered as a tunnel or refused (doneDecided); false once shutting down.
func (p *pendingSet) addDecided() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

func (p *pendingSet) doneDecided() { p.wg.Done() }

func (p *pendingSet) done(c net.Conn) {
	p.mu.Lock()
	delete(p.m, c)
	p.mu.Unlock()
	p.wg.Done()
}

// closeAndWait refuses new connections, unblocks the ones still reading a
// head (their reads fail now) and waits until every one has been handed
// off, refused or registered as a tunnel.
func (p *pendingSet) closeAndWait() {
	p.mu.Lock()
	p.closed = true
	for c, reading := range p.m {
		if reading {
			c.SetReadDeadline(time.Now())
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}
