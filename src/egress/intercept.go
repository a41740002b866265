package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Interception. A CONNECT to a host that a secret is bound to, or that has
// request rules, is not relayed as an opaque tunnel: the proxy answers the
// TLS handshake itself with a certificate for that host signed by the
// session CA (which the agent's tools trust; its key is only in the proxy),
// reads each HTTP/1.1 request, checks and changes it (inspect: request
// rules, leak detection, secrets in place of placeholders) and sends it on
// over its own TLS connection to the host, verifying the host's
// certificate as any client would. Every request goes to the host the
// CONNECT named, at the addresses its check produced: a Host header naming
// another is refused. Every other host stays an opaque tunnel.

// runIntercept serves an intercepted CONNECT tunnel until the client leaves
// or the tunnel is closed.
func (s *Server) runIntercept(t *tunnel, client net.Conn, addrs []netip.Addr, rec *record) {
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

	host, port := rec.host, rec.port
	cert, err := s.issuer.certFor(host)
	if err != nil {
		s.opts.Logf("intercept %s: %v", host, err)
		t.close()
		return
	}
	tc := tls.Server(client, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	target := &dialTarget{addrs: addrs, port: port}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveIntercepted(w, r, target, rec.client, host, port)
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

// serveIntercepted handles one request read from an intercepted tunnel.
func (s *Server) serveIntercepted(w http.ResponseWriter, r *http.Request, target *dialTarget, client, host string, port int) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	rec := &record{start: time.Now(), client: client, method: r.Method, host: host, port: port}
	deny := func(code int) {
		rec.logged.Store(true)
		s.log(rec)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if code == http.StatusBadRequest {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(code)
		io.WriteString(w, s.refusal(code, rec))
	}
	if r.Host != "" && !hostMatches(withDefaultPort(r.Host, 443), host, port) {
		rec.rule, rec.reason = "host-mismatch", "the Host header does not name the host of the CONNECT"
		deny(http.StatusBadRequest)
		return
	}
	if r.Header.Get("Upgrade") != "" {
		rec.rule, rec.reason = "intercepted", "protocol upgrades are not carried to an intercepted host"
		deny(http.StatusForbidden)
		return
	}
	// The policy may have changed since the CONNECT: decide the host again.
	d := s.policy.Load().Decide(host, port, true)
	rec.rule, rec.reason = d.Rule, d.Reason
	if !d.Allow {
		deny(http.StatusForbidden)
		return
	}
	rec.allow = true
	if code := s.inspect(r, rec, true); code != 0 {
		deny(code)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &rec.bodyUp}
	}
	ctx := context.WithValue(r.Context(), dialKey{}, target)
	cw := &countingWriter{ResponseWriter: w}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = hostForURL(host)
			if port != 443 {
				pr.Out.URL.Host += ":" + strconv.Itoa(port)
			}
			pr.Out.Host = ""
		},
		Transport:     s.upstreamTransport(),
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if !s.maskResponse(resp) {
				return errCompressedResponse
			}
			return nil
		},
		ErrorLog: log.New(logWriter(s.opts.Logf), "intercept: ", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var le *leakError
			if errors.As(err, &le) {
				rec.allow, rec.leak, rec.rule, rec.reason = false, le.n.secret, "leak-detection", le.Error()
				deny(http.StatusForbidden)
				return
			}
			rec.err = err.Error()
			deny(http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(cw, r.WithContext(ctx))
	rec.down = cw.n
	if rec.logged.Load() {
		return
	}
	s.log(rec)
}

// upstreamTransport is the transport of intercepted requests: TLS to the
// host, verified against the system roots (or Options.UpstreamRoots), over
// connections to the checked addresses only.
func (s *Server) upstreamTransport() *http.Transport {
	s.upOnce.Do(func() {
		s.upTr = &http.Transport{
			Proxy:                 nil,
			DialContext:           s.dialChecked,
			TLSClientConfig:       &tls.Config{RootCAs: s.opts.UpstreamRoots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     false,
			TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       60 * time.Second,
			TLSHandshakeTimeout:   s.opts.DialTimeout,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true,
		}
	})
	return s.upTr
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

// countingWriter counts the response body bytes written to the client.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
