package egress

import (
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Interception. A CONNECT that Explain says is intercepted (a secret is
// bound to its host, or the host has request rules) is not relayed as an
// opaque tunnel: the proxy answers the TLS handshake itself with a
// certificate for that host signed by the session CA (which the agent's
// tools trust; its key is only in the proxy), reads each HTTP/1.1 request
// and takes it through the request pipeline (pipeline.go), which sends it
// on over the proxy's own TLS connection to the host, verifying the host's
// certificate as any client would. Every request goes to the host the
// CONNECT named, at the addresses its check produced: a Host header naming
// another is refused. Every other host stays an opaque tunnel.

// runIntercept serves an intercepted CONNECT tunnel until the client leaves
// or the tunnel is closed.
func (s *Server) runIntercept(t *tunnel, client net.Conn, rt *route, rec *record) {
	defer func() {
		t.cancel()
		s.tunnels.remove(t)
	}()
	if pc, ok := client.(*prefixConn); ok {
		client = &replayConn{Conn: pc.Conn, pending: pc.prefix}
	}
	if !t.attach(client, nil) {
		s.refuseShuttingDown(client, rec)
		return
	}
	if !s.established(t, client, rec) {
		return
	}
	rec.reason = "intercepted"
	s.log(rec) // the tunnel's line; each request inside gets its own

	cert, err := s.issuer.certFor(rt.Host)
	if err != nil {
		s.opts.Logf("intercept %s: %v", rt.Host, err)
		t.close()
		return
	}
	tc := tls.Server(client, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveIntercepted(w, r, rt, rec.client)
		}),
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(s.opts.Logf), "intercept: ", 0),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	l := &oneConnListener{c: tc, done: make(chan struct{}), closed: make(chan struct{})}
	t.mu.Lock()
	t.inner = srv
	t.mu.Unlock()
	if s.stopped.Load() { // Shutdown may have passed the tunnels already
		go srv.Shutdown(t.ctx)
	}
	srv.Serve(l)
	<-l.done // the connection is closed: its requests are done
	t.close()
}

// serveIntercepted takes one request read from an intercepted tunnel into
// the pipeline, with the policy in force now (it may have changed since the
// CONNECT). Its Host must name the CONNECT's host.
func (s *Server) serveIntercepted(w http.ResponseWriter, r *http.Request, rt *route, client string) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	rec := &record{start: time.Now(), client: client, method: r.Method, host: rt.Host, port: rt.Port, hasBody: r.ContentLength != 0}
	if r.Host != "" && !hostMatches(withDefaultPort(r.Host, 443), rt.Host, rt.Port) {
		rec.rule, rec.reason = "host-mismatch", "the Host header does not name the host of the CONNECT"
		s.refuse(w, rec, http.StatusBadRequest)
		return
	}
	ex := s.explain(s.policy.Load(), rt.Target)
	s.serveRequest(w, r, rec, rt, &ex)
}

// hostForURL is host as a URL's authority writes it.
func hostForURL(h string) string {
	if a, err := netip.ParseAddr(h); err == nil && a.Is6() {
		return "[" + h + "]"
	}
	return h
}

// withDefaultPort is a Host header value with def as its port when it
// names none.
func withDefaultPort(v string, def int) string {
	if i := strings.LastIndexByte(v, ':'); i < 0 || strings.HasSuffix(v, "]") {
		return v + ":" + strconv.Itoa(def)
	}
	return v
}

// replayConn returns bytes read before the hijack ahead of the socket's.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// oneConnListener hands an http.Server one connection, then waits for it
// to be closed, or for the server to close the listener (Shutdown, which
// waits for Serve to return before it closes idle connections).
type oneConnListener struct {
	mu     sync.Mutex
	c      net.Conn
	done   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return &notifyConn{Conn: c, done: l.done}, nil
	}
	select {
	case <-l.done:
	case <-l.closed:
	}
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return dummyAddr{} }

type dummyAddr struct{}

func (dummyAddr) Network() string { return "intercept" }
func (dummyAddr) String() string  { return "intercept" }

type notifyConn struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}
