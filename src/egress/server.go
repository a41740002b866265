package egress

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// AuthUser is the user name proxy clients authenticate with; the token is
// the password: HTTP_PROXY=http://hobbs:TOKEN@proxy:3128.
const AuthUser = "hobbs"

// HealthPath is the non-proxy path the proxy answers 200 on.
const HealthPath = "/healthz"

// Options configure a Server.
type Options struct {
	PolicyFiles []string // merged in order; at least one
	AuthToken   string   // when set, clients must send Basic Proxy-Authorization hobbs:AuthToken
	AuditPath   string   // JSONL audit log; empty: no audit
	Session     string   // the session whose traffic this is, named in each audit line
	// LookupNetIP resolves a name; nil uses the system resolver. Tests pass
	// a fake (real DNS is not available to them).
	LookupNetIP   func(ctx context.Context, host string) ([]netip.Addr, error)
	Logf          func(format string, args ...any) // operational log (stderr), called concurrently; nil: discard
	DialTimeout   time.Duration                    // default 10 s
	HeaderTimeout time.Duration                    // time to read a request head; default 10 s
	IdleTimeout   time.Duration                    // a tunnel with no traffic either way is closed; default 10 min
	Debounce      time.Duration                    // policy reload debounce; default 100 ms
	DNSCacheTTL   time.Duration                    // keep successful lookups this long; default 5 s, <0 disables

	// Secrets are the session's CA and bound secrets (LoadSessionSecrets);
	// nil: no interception, no substitution, and a CONNECT to a host with
	// request rules is refused (the rules could not be applied).
	Secrets *policy.SessionSecrets
	// UpstreamRoots verify intercepted hosts' certificates; nil: the
	// system's roots.
	UpstreamRoots *x509.CertPool
	// Hold holds requests to hosts outside the policy while the owner is
	// asked (hold.go); the zero value holds nothing.
	Hold HoldOptions
}

// Server is the egress proxy.
type Server struct {
	opts    Options
	policy  atomic.Pointer[policy.Policy]
	gp      *goproxy.ProxyHttpServer
	hs      *http.Server
	tr      *http.Transport        // the pipeline's one transport (pipeline.go)
	rp      *httputil.ReverseProxy // the pipeline's forwarding step
	audit   *auditLog
	tunnels tunnelSet
	conns   tapSet
	// handlers counts the HTTP handler calls under way: a hijacked
	// connection's handler still decides, dials or logs after net/http's
	// Shutdown has stopped tracking it.
	handlers sync.WaitGroup
	// upgrades ends when Shutdown gives up waiting: a plain-HTTP
	// connection upgraded (websocket) is hijacked, out of net/http's
	// reach, and its handler runs until this ends or either side closes.
	upgrades   context.Context
	endUpgrade context.CancelFunc
	watch      *watcher
	// loadedSum is policySum of the files taken before the policy in
	// force was read from them (watch.go).
	loadedSum atomic.Pointer[string]
	dns       dnsCache
	stopped   atomic.Bool

	issuer *leafIssuer // the session CA's signer; nil without Options.Secrets
	hold   *holder     // nil: nothing is held (hold.go)
	// agentMask and auditMask replace the secrets' values (mask.go).
	agentMask, auditMask *policy.Masker
	// openedTargets are the targets whose opening is on record (opened.go).
	openedTargets openedSet
}

// NewServer loads the policy files and builds a server. It fails (exit 2
// errors with file:line) when a policy file is invalid.
func NewServer(opts Options) (*Server, error) {
	if len(opts.PolicyFiles) == 0 {
		return nil, errors.New("egress: no policy file")
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.HeaderTimeout == 0 {
		opts.HeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 10 * time.Minute
	}
	if opts.DNSCacheTTL == 0 {
		opts.DNSCacheTTL = 5 * time.Second
	}
	if opts.Debounce == 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.LookupNetIP == nil {
		opts.LookupNetIP = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	sum := policySum(opts.PolicyFiles)
	p, err := policy.LoadFiles(opts.PolicyFiles...)
	if err != nil {
		return nil, err
	}
	if opts.AuditPath != "" { // fail at start, not on the first decision
		f, err := os.OpenFile(opts.AuditPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "audit log")
		}
		f.Close()
	}
	s := &Server{opts: opts}
	s.loadedSum.Store(&sum)
	s.upgrades, s.endUpgrade = context.WithCancel(context.Background())
	if opts.Secrets != nil {
		if err := opts.Secrets.Prepare(); err != nil {
			return nil, errs.Usagef("secrets: %v", err)
		}
		if s.issuer, err = newLeafIssuer(opts.Secrets.CACert, opts.Secrets.CAKey); err != nil {
			return nil, errs.Usagef("secrets: %v", err)
		}
	}
	s.buildMasks()
	s.dns = dnsCache{lookup: opts.LookupNetIP, ttl: opts.DNSCacheTTL}
	s.policy.Store(p)
	s.audit = newAuditLog(opts.AuditPath, opts.Logf)
	if s.hold, err = newHolder(s, opts.Hold); err != nil {
		return nil, errs.Usagef("hold: %v", err)
	}

	s.newForwarder()
	// goproxy takes CONNECT requests to handleConnect, which hijacks every
	// one; it never dials or forwards by itself.
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(logWriter(opts.Logf), "goproxy: ", 0)
	gp.Tr = s.tr
	gp.ConnectDial = func(string, string) (net.Conn, error) {
		return nil, errors.New("egress: goproxy's own CONNECT dialer is disabled")
	}
	gp.NonproxyHandler = http.HandlerFunc(s.serveNonProxy)
	gp.OnRequest().HandleConnectFunc(s.handleConnect)
	s.gp = gp
	s.hs = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
		ErrorLog:          log.New(logWriter(opts.Logf), "http: ", 0),
		ConnContext:       tapConnContext,
		ConnState:         s.conns.connState,
		// Every request must reach serveHTTP (the Host tap pairs heads with
		// handler calls); "OPTIONS *" would otherwise be answered by net/http.
		DisableGeneralOptionsHandler: true,
	}
	return s, nil
}

// Policy returns the policy in force.
func (s *Server) Policy() *policy.Policy { return s.policy.Load() }

// Listen opens the proxy's listening socket: HOST:PORT, or unix:PATH for a
// unix socket (what a `hobbs run` session's agent reaches the proxy by). TCP
// keep-alive is off: the clients are local containers, and idle or dead
// tunnels are reaped by the idle timeout. A unix socket is made readable and
// writable by its owner only; a socket file left at PATH (a proxy that was
// killed) is replaced, anything else there is an error.
func Listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		lc := net.ListenConfig{KeepAlive: -1}
		return lc.Listen(context.Background(), "tcp", addr)
	}
	if path == "" {
		return nil, errors.New("unix: needs a path")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Connecting takes write permission on the socket: the owner's only.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// DialAddr dials a proxy address as Listen takes it (HOST:PORT or
// unix:PATH).
func DialAddr(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return d.DialContext(ctx, "unix", path)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// Serve accepts proxy clients on l until Shutdown: every connection is
// served by the net/http server; CONNECT requests go through goproxy,
// plain-HTTP ones into the request pipeline.
func (s *Server) Serve(l net.Listener) error {
	err := s.hs.Serve(tapListener{l})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Reload re-reads the policy files and swaps the policy in force. On error
// the previous policy stays.
func (s *Server) Reload() error {
	sum := policySum(s.opts.PolicyFiles)
	s.loadedSum.Store(&sum) // a failed read is seen too: the next change reloads
	p, err := policy.LoadFiles(s.opts.PolicyFiles...)
	if err != nil {
		s.opts.Logf("policy reload failed, keeping the previous policy: %v", err)
		return err
	}
	s.policy.Store(p)
	s.dns.flush()
	s.tr.CloseIdleConnections()
	s.opts.Logf("policy reloaded: %s", p.Summary())
	return nil
}

// Shutdown stops accepting, lets requests and tunnels finish until ctx ends,
// then closes what is left and flushes the audit log.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.stopped.Swap(true) {
		return nil
	}
	if s.watch != nil {
		s.watch.stop()
	}
	s.hold.close()    // held requests are refused: no question outlives the session
	s.tunnels.drain() // tunnels decided from now on are refused
	s.conns.cutHeads()
	err := s.hs.Shutdown(ctx) // closes the listener: no new connections
	if err != nil {
		s.hs.Close()
	}
	// Handlers end soon once their connections are closed (a request's
	// context ends with its connection; a tunnel's dial with the tunnel;
	// an upgraded connection's relay with s.upgrades).
	if !waitGroup(ctx, &s.handlers) {
		s.endUpgrade()
		s.tunnels.closeAll()
		s.handlers.Wait()
	}
	s.endUpgrade()
	for _, t := range s.tunnels.snapshot() {
		go t.shutdownInner(ctx)
	}
	if !s.tunnels.wait(ctx) {
		s.tunnels.closeAll()
		s.tunnels.wait(context.Background())
	}
	s.tr.CloseIdleConnections()
	s.audit.close()
	return err
}

// waitGroup waits for wg or ctx; it reports whether wg was done.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// ActiveTunnels is the number of open CONNECT tunnels.
func (s *Server) ActiveTunnels() int { return s.tunnels.count() }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	if tap, ok := r.Context().Value(tapKey{}).(*hostTap); ok {
		tap.handlers.Add(1)
		defer tap.handlers.Add(-1)
		// Every request that reaches a handler claims its head's Host,
		// before anything can answer it: the next request's is the next.
		if th, ok := tap.next(); ok && r.Method != http.MethodConnect {
			r = r.WithContext(context.WithValue(r.Context(), tapHostKey{}, th))
		}
	}
	if r.ProtoMajor != 1 {
		w.Header().Set("Connection", "close")
		http.Error(w, "hobbs proxy: HTTP/1.1 only", http.StatusHTTPVersionNotSupported)
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		if hj, ok := w.(http.Hijacker); ok {
			w = bufferedHijacker{w, hj}
		}
		s.gp.ServeHTTP(w, r)
	case r.URL.IsAbs():
		s.servePlain(w, r)
	default:
		s.serveNonProxy(w, r)
	}
}

type tapHostKey struct{}

// bufferedHijacker hands the tunnel the bare socket (so that the relay can
// splice) and keeps the bytes a client sent right behind its CONNECT
// request (before the 200): the HTTP server may already have read them into
// its buffer, which goproxy's hijack would drop.
type bufferedHijacker struct {
	http.ResponseWriter
	hj http.Hijacker
}

func (b bufferedHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := b.hj.Hijack()
	if t, ok := c.(*hostTap); ok {
		c = t.Conn
	}
	if err != nil || brw == nil || brw.Reader.Buffered() == 0 {
		return c, brw, err
	}
	early, _ := brw.Reader.Peek(brw.Reader.Buffered())
	return &prefixConn{Conn: c, prefix: append([]byte(nil), early...)}, brw, nil
}

func (s *Server) serveNonProxy(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	}
	http.Error(w, "hobbs proxy: not a proxy request (use an absolute URL or CONNECT)", http.StatusNotFound)
}

// authorized checks Basic Proxy-Authorization against the token.
func (s *Server) authorized(r *http.Request) bool {
	v := r.Header.Values("Proxy-Authorization")
	value := ""
	if len(v) > 0 {
		value = v[0]
	}
	return s.authorizedValue(value, len(v))
}

// authorizedValue checks the value of the Proxy-Authorization header, sent
// count times (exactly once when a token is required: two credentials are
// refused, whichever comes first).
func (s *Server) authorizedValue(value string, count int) bool {
	if s.opts.AuthToken == "" {
		return true
	}
	if count != 1 {
		return false
	}
	scheme, cred, ok := strings.Cut(value, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	return ok && user == AuthUser && subtle.ConstantTimeCompare([]byte(pass), []byte(s.opts.AuthToken)) == 1
}

// record is what one decision writes to the audit log.
type record struct {
	start    time.Time
	client   string
	method   string
	host     string
	port     int
	ip       string
	allow    bool
	rule     string
	reason   string
	err      string
	up, down int64
	// bodyUp counts the body of a request the proxy reads, read by the
	// transport's own goroutine, which may still be sending when the
	// response is done.
	bodyUp atomic.Int64
	// For a request the proxy reads (plain HTTP, intercepted HTTPS): its
	// path (no query), the secrets put in it, the secret it tried to leak.
	path    string
	secrets []string
	leak    string
	// badAnswer: the host answered, with what the proxy does not pass on
	// (err says why).
	badAnswer bool
	// hasBody: the request announced a body (refuse closes the connection
	// rather than wait for a body the client may send only once answered).
	hasBody bool
	logged  atomic.Bool // a read request's line is written (logOnce)
	// holdPath is a plain-HTTP request's path (no query), for the question
	// of a held request.
	holdPath string
}

// clientName is a client's address as the audit shows it: a peer on the
// unix socket has none ("unix").
func clientName(addr string) string {
	if addr == "" || addr == "@" {
		return "unix"
	}
	return addr
}

func (s *Server) log(rec *record) {
	l := s.auditLine(rec)
	l.Subject = s.toAudit(l.Subject)
	d := &l.Detail
	d.Method, d.Rule, d.Reason, d.Error, d.Path = s.toAudit(d.Method), s.toAudit(d.Rule), s.toAudit(d.Reason), s.toAudit(d.Error), s.toAudit(d.Path)
	s.audit.log(&l)
}

// auditLine is rec's audit line.
func (s *Server) auditLine(rec *record) policy.AuditLine {
	l := policy.AuditLine{Time: rec.start.UTC(), Actor: "proxy", Session: s.opts.Session, Event: "egress.deny", Outcome: "denied",
		Subject: net.JoinHostPort(rec.host, strconv.Itoa(rec.port)),
		Detail: policy.AuditDetail{Client: clientName(rec.client), Method: rec.method, IP: rec.ip, Rule: rec.rule, Reason: rec.reason,
			Error: rec.err, Path: rec.path, Secrets: rec.secrets, Leak: rec.leak,
			BytesUp: rec.up + rec.bodyUp.Load(), BytesDown: rec.down, DurationMS: time.Since(rec.start).Milliseconds()}}
	switch {
	case rec.allow:
		l.Event, l.Outcome = "egress.allow", "allowed"
	case rec.leak != "":
		l.Event = "egress.leak"
	}
	return l
}

// decide runs the whole check for one destination: parse and normalise,
// the policy's explanation (Explain), resolve, guard. On success it returns
// the route, with the checked addresses to dial, and the explanation; on
// refusal the status to answer with.
func (s *Server) decide(ctx context.Context, rec *record, hostText, portText string, connect bool) (*route, policy.Explanation, int) {
	h, err := policy.NormalizeHost(hostText)
	if err == nil {
		rec.host = h.String()
	} else {
		rec.host = hostText
	}
	port, perr := policy.ParsePort(portText)
	rec.port = port
	if err != nil || perr != nil {
		rec.rule, rec.reason = "bad-target", "invalid host or port"
		return nil, policy.Explanation{}, http.StatusBadRequest
	}
	if n, ok := hostLeak(hostText, s.secrets()); ok {
		rec.rule, rec.leak, rec.reason = "leak-detection", n.secret, (&leakError{n: n, host: "a host name"}).Error()
		return nil, policy.Explanation{}, http.StatusForbidden
	}
	p := s.policy.Load()
	rt := &route{Target: policy.Target{Host: h.String(), Port: port, Connect: connect}}
	ex := s.explain(p, rt.Target)
	rec.rule, rec.reason = ex.Rule, ex.Reason
	if !ex.Allow && s.hold != nil && holdable(p, h, ex) {
		if hex, ok := s.hold.ask(ctx, rec, rt.Target); ok {
			ex = hex
			rec.rule, rec.reason = ex.Rule, ex.Reason
		}
	}
	if !ex.Allow {
		if ex.Rule == "address-guard" {
			rec.ip = h.String()
		}
		return nil, policy.Explanation{}, http.StatusForbidden
	}
	if h.IsIP() {
		rt.addrs = []netip.Addr{h.IP}
	} else {
		lctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
		rt.addrs, err = s.dns.resolve(lctx, h.Name)
		cancel()
		if err != nil || len(rt.addrs) == 0 {
			rec.allow = true
			rec.err = "resolve: " + errString(err, "no addresses")
			return nil, policy.Explanation{}, http.StatusBadGateway
		}
	}
	for i, a := range rt.addrs {
		a = a.Unmap().WithZone("")
		rt.addrs[i] = a
		if ok, why := p.AddrAllowed(a); !ok {
			rec.ip, rec.rule, rec.reason = a.String(), "address-guard", why
			return nil, policy.Explanation{}, http.StatusForbidden
		}
	}
	rec.allow = true
	rec.ip = rt.addrs[0].String()
	s.hold.noteAllowed(p, rt.Target)
	return rt, ex, 0
}

// explain is p's explanation of t for this proxy: its session's secrets,
// and interception only with a session CA.
func (s *Server) explain(p *policy.Policy, t policy.Target) policy.Explanation {
	return p.Explain(t, s.opts.Secrets.Matchers(), s.issuer != nil)
}

func errString(err error, def string) string {
	if err == nil {
		return def
	}
	return err.Error()
}

// refusal is what the proxy answers a refused or failed request with, with
// every secret value in it replaced by its placeholder (an error can quote
// what a bound host sent back).
func (s *Server) refusal(code int, rec *record) string {
	return s.toAgent(refusal(code, rec))
}

func refusal(code int, rec *record) string {
	switch code {
	case http.StatusProxyAuthRequired:
		return "hobbs proxy: proxy authentication required\n"
	case http.StatusBadGateway:
		if rec.badAnswer {
			return fmt.Sprintf("hobbs proxy: refused the answer of %s: %s\n", net.JoinHostPort(rec.host, strconv.Itoa(rec.port)), rec.err)
		}
		return fmt.Sprintf("hobbs proxy: cannot reach %s: %s\n", net.JoinHostPort(rec.host, strconv.Itoa(rec.port)), rec.err)
	case http.StatusServiceUnavailable:
		return "hobbs proxy: shutting down\n"
	}
	msg := fmt.Sprintf("hobbs proxy: %s to %s denied by %s: %s\n", rec.method,
		net.JoinHostPort(rec.host, strconv.Itoa(rec.port)), rec.rule, rec.reason)
	if code == http.StatusForbidden && rec.rule == "default-deny" {
		// The host is in canonical form here (the policy decided on it).
		target := rec.host
		if strings.Contains(target, ":") {
			target = "[" + target + "]"
		}
		if rec.port != 443 && rec.port != 80 {
			target = net.JoinHostPort(rec.host, strconv.Itoa(rec.port))
		}
		msg += "hobbs proxy: hint: to allow it, run on the host (not in the agent's container): hobbs policy allow " + target + "\n"
	}
	return msg
}

// handleConnect decides a CONNECT request. Every outcome hijacks the
// connection: refusals answer with a status and a reason, never a silent
// close; an allowed tunnel dials exactly the checked addresses.
func (s *Server) handleConnect(_ string, pctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	r := pctx.Req
	rec := &record{start: time.Now(), client: r.RemoteAddr, method: http.MethodConnect}
	v := r.Header.Values("Proxy-Authorization")
	auth := ""
	if len(v) > 0 {
		auth = v[0]
	}
	rt, ex, code := s.connectDecision(r.Context(), rec, r.RequestURI, auth, len(v))
	intercept := ex.Intercepted()
	if code != 0 {
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: func(_ *http.Request, c net.Conn, _ *goproxy.ProxyCtx) {
			s.log(rec) // before answering: once the client has its 403, the line is queued
			writeRaw(c, code, s.refusal(code, rec))
			c.Close()
		}}, ""
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: func(_ *http.Request, c net.Conn, _ *goproxy.ProxyCtx) {
		// Registered once hijacked, still inside the handler (which
		// Shutdown waits for): a hijack that fails leaves nothing behind.
		// The handler then returns, and with it what net/http and goproxy
		// hold for the request.
		t := s.tunnels.add()
		if t == nil {
			s.refuseShuttingDown(c, rec)
			return
		}
		if intercept {
			go s.runIntercept(t, c, rt, rec)
			return
		}
		go s.runTunnel(t, c, rt.addrs, rec)
	}}, ""
}

// connectDecision decides a CONNECT request: proxy authentication, then the
// request-target, which must be exactly host:port, through decide. The
// explanation says whether the tunnel is intercepted.
func (s *Server) connectDecision(ctx context.Context, rec *record, target, auth string, authCount int) (*route, policy.Explanation, int) {
	if !s.authorizedValue(auth, authCount) {
		rec.host, rec.rule, rec.reason = target, "proxy-auth", "missing or wrong proxy credentials"
		return nil, policy.Explanation{}, http.StatusProxyAuthRequired
	}
	host, port, ok := splitAuthority(target)
	if !ok {
		rec.host, rec.rule, rec.reason = target, "bad-target", "CONNECT needs host:port"
		return nil, policy.Explanation{}, http.StatusBadRequest
	}
	return s.decide(ctx, rec, host, port, true)
}

// splitAuthority splits a CONNECT request-target, which must be exactly
// host:port (no scheme, userinfo or path).
func splitAuthority(s string) (host, port string, ok bool) {
	if s == "" || strings.ContainsAny(s, "/@?#\\ ") {
		return "", "", false
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	host, port = s[:i], s[i+1:]
	if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
		return "", "", false
	}
	return host, port, host != ""
}

func writeRaw(c net.Conn, code int, body string) {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.Write(refusalBytes(code, body))
}

// refusalBytes is a complete answer that closes the connection.
func refusalBytes(code int, body string) []byte {
	extra := ""
	if code == http.StatusProxyAuthRequired {
		extra = "Proxy-Authenticate: Basic realm=\"hobbs\"\r\n"
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), extra, len(body), body)
}

// servePlain takes a plain-HTTP (absolute-form) request into the pipeline.
// Its target is the request URL's host: the Host header is discarded by the
// HTTP server (the host tap has it, and it must name the same host), and
// the forwarded request names the URL's host.
func (s *Server) servePlain(w http.ResponseWriter, r *http.Request) {
	rec := &record{start: time.Now(), client: r.RemoteAddr, method: r.Method, hasBody: r.ContentLength != 0, holdPath: r.URL.Path}
	if !s.authorized(r) {
		rec.host, rec.rule, rec.reason = r.URL.Host, "proxy-auth", "missing or wrong proxy credentials"
		s.refuse(w, rec, http.StatusProxyAuthRequired)
		return
	}
	u := r.URL
	if u.Scheme != "http" || u.User != nil || u.Opaque != "" || u.Host == "" {
		rec.host, rec.rule, rec.reason = u.Host, "bad-target", "only http:// URLs are forwarded; use CONNECT for https"
		s.refuse(w, rec, http.StatusBadRequest)
		return
	}
	host, port := u.Host, "80"
	if i := strings.LastIndexByte(u.Host, ':'); i >= 0 && !strings.HasSuffix(u.Host, "]") {
		host, port = u.Host[:i], u.Host[i+1:]
	}
	if th, ok := r.Context().Value(tapHostKey{}).(tapHost); ok && th.present {
		h, herr := policy.NormalizeHost(host)
		p, perr := policy.ParsePort(port)
		if herr != nil || perr != nil || !hostMatches(th.value, h.String(), p) {
			rec.host, rec.rule = host, "host-mismatch"
			rec.port = p
			rec.reason = "the Host header does not name the URL's host"
			s.refuse(w, rec, http.StatusBadRequest)
			return
		}
	}
	rt, ex, code := s.decide(r.Context(), rec, host, port, false)
	if code != 0 {
		s.refuse(w, rec, code)
		return
	}
	s.serveRequest(w, r, rec, rt, &ex)
}

// logWriter adapts Logf to an io.Writer for the standard loggers, redacting.
type logWriter func(string, ...any)

func (f logWriter) Write(p []byte) (int, error) {
	f("%s", audit.Redact(strings.TrimRight(string(p), "\n")))
	return len(p), nil
}
