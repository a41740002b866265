package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// The request pipeline. Every request the proxy reads — plain HTTP
// (absolute-form, from the proxy's own HTTP server) and each request inside
// an intercepted tunnel (from that tunnel's HTTP server, over the session
// CA's TLS) — goes through serveRequest, and nothing else forwards a
// request: the policy's verdict (Explain, with the policy in force), then
// inspect (protocol upgrades, request rules, leak detection, substitution
// by position, SigV4 signing),
// then one httputil.ReverseProxy (Server.rp) that sends it on over one
// transport to the checked addresses only, masks the response (headers,
// body, trailers, informational responses) and writes the audit line. The
// two ways in differ only in how they find the request's target: the URL
// of a plain-HTTP request (which its Host header must name), or the host of
// the CONNECT (which each request's Host must name).

// route is where a request the proxy reads goes: the destination its check
// allowed and the addresses that check produced, the only ones dialled.
type route struct {
	policy.Target
	addrs []netip.Addr
}

// authority is the route's host and port as a URL writes them, the port
// left out when it is the scheme's default.
func (rt *route) authority() string {
	h := hostForURL(rt.Host)
	if rt.Connect && rt.Port == 443 || !rt.Connect && rt.Port == 80 {
		return h
	}
	return h + ":" + strconv.Itoa(rt.Port)
}

// exchange is one request in the pipeline, carried in the forwarded
// request's context to the ReverseProxy's hooks and the dialer.
type exchange struct {
	rec *record
	rt  *route
	s   *Server
}

type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// errUnrequestedUpgrade is a 101 that is not the answer to the request's
// upgrade: answered with 502.
var errUnrequestedUpgrade = errors.New("the host switched to a protocol the request did not ask for")

// newForwarder builds the server's one transport and ReverseProxy.
func (s *Server) newForwarder() {
	s.tr = &http.Transport{
		Proxy:       nil, // never chain to the environment's proxy
		DialContext: s.dialChecked,
		// Intercepted requests go on over TLS, verifying the host's
		// certificate against the system roots (or Options.UpstreamRoots).
		TLSClientConfig:       &tls.Config{RootCAs: s.opts.UpstreamRoots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   s.opts.DialTimeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	s.rp = &httputil.ReverseProxy{
		Rewrite:   rewrite,
		Transport: s.tr,
		// A body of unknown length (every masked one) or an event stream
		// is flushed as it arrives; one of known length is buffered.
		FlushInterval:  0,
		BufferPool:     copyBuffers{},
		ModifyResponse: modifyResponse,
		ErrorHandler:   forwardError,
		ErrorLog:       log.New(logWriter(s.opts.Logf), "forward: ", 0),
	}
}

// copyBuffers lends the ReverseProxy the buffers it copies response bodies
// with, instead of one new 32 KiB buffer per request.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (copyBuffers) Get() []byte  { return copyBufferPool.Get().(*[32 << 10]byte)[:] }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put((*[32 << 10]byte)(b)) }

// serveRequest takes one request through the pipeline. ex is the policy's
// explanation of rt, with the policy in force; rec is the request's audit
// record, written once, when the request is refused or its response is
// done (an upgrade's when the upgrade is answered).
func (s *Server) serveRequest(w http.ResponseWriter, r *http.Request, rec *record, rt *route, ex *policy.Explanation) {
	rec.rule, rec.reason = ex.Rule, ex.Reason
	if !ex.Allow {
		s.refuse(w, rec, http.StatusForbidden)
		return
	}
	rec.allow = true
	if code := s.inspect(r, rec, rt.Target, ex); code != 0 {
		s.refuse(w, rec, code)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &rec.bodyUp}
	}
	cw := &countingWriter{ResponseWriter: w, s: s}
	defer func() { // also when the ReverseProxy aborts a response it could not finish
		rec.down = cw.n
		s.logOnce(rec)
	}()
	ctx := r.Context()
	if r.Header.Get("Upgrade") != "" { // allowed by inspect: relayed until Shutdown gives up
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.upgrades, cancel)()
	}
	s.rp.ServeHTTP(cw, r.WithContext(context.WithValue(ctx, exchangeKey{}, &exchange{rec: rec, rt: rt, s: s})))
}

// rewrite sends the request to its route's host, named as checked, over
// TLS for an intercepted tunnel's requests.
func rewrite(pr *httputil.ProxyRequest) {
	x := exchangeOf(pr.Out.Context())
	pr.Out.URL.Scheme = "http"
	if x.rt.Connect {
		pr.Out.URL.Scheme = "https"
	}
	pr.Out.URL.Host = x.rt.authority()
	pr.Out.URL.User = nil
	pr.Out.Host = "" // the URL's host is the Host the target sees
}

// modifyResponse masks what comes back. A 101 is passed on only as the
// answer to the upgrade the request asked for (inspect refuses upgrades
// where secrets or request rules apply); its audit line is written now,
// without byte counts, as the connection then carries the protocol it
// switched to.
func modifyResponse(resp *http.Response) error {
	x := exchangeOf(resp.Request.Context())
	if err := x.s.opened(x.rec); err != nil { // before the response head is passed on
		return fmt.Errorf("audit log: %w", err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if up := resp.Request.Header.Get("Upgrade"); up == "" || !strings.EqualFold(up, resp.Header.Get("Upgrade")) {
			return errUnrequestedUpgrade
		}
		x.s.logOnce(x.rec)
		return nil
	}
	return x.s.maskResponse(resp)
}

// forwardError answers a request that could not be forwarded: 403 when
// its body carried a leak (found as it streamed), 502 otherwise (the host
// could not be reached, or its answer cannot be passed on).
func forwardError(w http.ResponseWriter, r *http.Request, err error) {
	x := exchangeOf(r.Context())
	rec := x.rec
	var le *leakError
	if errors.As(err, &le) {
		rec.allow, rec.leak, rec.rule, rec.reason = false, le.n.secret, "leak-detection", le.Error()
		x.s.refuse(w, rec, http.StatusForbidden)
		return
	}
	rec.err = err.Error()
	var ce *contentEncodingError
	rec.badAnswer = errors.As(err, &ce) || errors.Is(err, errUnrequestedUpgrade)
	x.s.refuse(w, rec, http.StatusBadGateway)
}

// refuse writes rec's audit line, then answers with code and the reason.
// A 400 closes the connection (what follows may be framed otherwise than
// the proxy read it), except for a target the proxy would not forward. So
// does the refusal of a request that announced a body: the HTTP server
// would otherwise read that body before it answers, and a client that
// sends it only once answered (an upgrade waiting for its 101) would wait
// for an answer that never comes.
func (s *Server) refuse(w http.ResponseWriter, rec *record, code int) {
	s.logOnce(rec) // before answering: once the client has its answer, the line is queued
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if code == http.StatusProxyAuthRequired {
		h.Set("Proxy-Authenticate", `Basic realm="hobbs"`)
	}
	if code == http.StatusBadRequest && rec.rule != "bad-target" || rec.hasBody {
		h.Set("Connection", "close")
	}
	w.WriteHeader(code)
	io.WriteString(w, s.refusal(code, rec))
}

// logOnce writes rec's audit line unless it has been written.
func (s *Server) logOnce(rec *record) {
	if rec.logged.CompareAndSwap(false, true) {
		s.log(rec)
	}
}

// dialChecked is the transport's dialer: it dials only the addresses the
// request's check produced, never the name in addr.
func (s *Server) dialChecked(ctx context.Context, network, _ string) (net.Conn, error) {
	x := exchangeOf(ctx)
	if x == nil {
		return nil, errors.New("egress: refusing to dial an unchecked address")
	}
	return dialFirst(ctx, x.rt.addrs, x.rt.Port, s.opts.DialTimeout)
}

func dialFirst(ctx context.Context, addrs []netip.Addr, port int, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1} // idle tunnels are reaped by the proxy; no keep-alive probes
	var first error
	for _, a := range addrs {
		// DialContext, not DialTCP: DialTCP binds the socket to its
		// (here empty) local address first, one system call per tunnel.
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// countingBody counts a request body's bytes, read by the transport's own
// goroutine, which may still be sending when the response is done.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countingWriter counts the response body bytes written to the client and
// masks the headers of informational (1xx) responses, which the
// ReverseProxy passes on as they arrive, before the response that
// maskResponse sees.
type countingWriter struct {
	http.ResponseWriter
	s *Server
	n int64
}

func (w *countingWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		for _, vs := range w.Header() {
			for i, v := range vs {
				vs[i] = w.s.toAgent(v)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
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

// Unwrap lets http.ResponseController reach the connection (a websocket
// upgrade on the plain path hijacks it).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
