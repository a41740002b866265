package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// maxSubstBody is the largest request body the proxy reads whole to put
// secrets in place of placeholders. A larger body is passed on as it is
// (its placeholders stay placeholders), scanned for leaks as it streams.
const maxSubstBody = 64 << 10

// leakError is a request that carries a secret (or its placeholder) to a
// host it is not bound to, or in a position its binding does not allow.
type leakError struct {
	n     needle
	host  string
	pos   policy.Position  // where it was found; 0: in the target host name
	place policy.Placement // the binding's, when the host is bound
	bound bool
}

func (e *leakError) Error() string {
	what := "the placeholder of " + e.n.secret
	if e.n.value {
		what = "the value of " + e.n.secret
	}
	if e.pos != 0 {
		what += " in its " + e.pos.String()
	}
	if e.bound {
		return fmt.Sprintf("request carries %s, where its binding does not put it: %s goes to %s only in %s (config.yaml secrets.%s)",
			what, e.n.secret, e.host, e.place, e.n.secret)
	}
	return fmt.Sprintf("request carries %s, which is not bound to %s", what, e.host)
}

// inspect is the pipeline's check of a request the policy allowed t (ex
// says what applies there): protocol upgrades, the host's request rules,
// then, when the session has secrets, leak detection (a placeholder where
// its binding does not put it), secret substitution where it does, and
// SigV4 signing for an aws-sigv4 binding. It changes r in place (headers,
// URL, body) and returns 0, or the status to refuse it with (rec says
// why).
func (s *Server) inspect(r *http.Request, rec *record, t policy.Target, ex *policy.Explanation) int {
	rec.path = r.URL.Path
	// Request trailers are not inspected: none is sent on.
	r.Trailer = nil
	sec := s.secrets()
	if code := checkUpgrade(r, rec, t, ex, len(sec) > 0); code != 0 {
		return code
	}
	if code := checkRules(r, rec, ex.Rules); code != 0 {
		return code
	}
	if len(sec) == 0 {
		return 0
	}
	in := newInspection(r, rec, t, ex, sec)
	for _, step := range []func() int{in.headLeaks, in.sigv4, in.readBody, in.substitute, in.putBody, in.sign} {
		if code := step(); code != 0 {
			return code
		}
	}
	rec.secrets = dedupe(in.used)
	return 0
}

// checkUpgrade refuses a protocol upgrade where the proxy reads the
// requests: an upgraded connection carries bytes it does not read. It is
// refused inside an intercepted tunnel, and on the plain path wherever
// request rules or secrets apply.
func checkUpgrade(r *http.Request, rec *record, t policy.Target, ex *policy.Explanation, secrets bool) int {
	if (t.Connect || ex.Rules != nil || secrets) && r.Header.Get("Upgrade") != "" {
		rec.allow, rec.rule = false, "upgrade"
		rec.reason = "a protocol upgrade would carry bytes the proxy does not inspect"
		return http.StatusForbidden
	}
	return 0
}

// checkRules applies the host's request rules (nil: none) to r. A request
// they allow is refused all the same when it asks, with a method-override
// header, to be taken as another method.
func checkRules(r *http.Request, rec *record, hr *policy.HostRules) int {
	if hr == nil {
		return 0
	}
	d := hr.Check(r.Method, r.URL.EscapedPath())
	if d.Allow {
		if h := methodOverride(r.Header); h != "" {
			d = policy.RequestDecision{Rule: "rules " + hr.Host.Pattern + ": " + h + " header", Source: hr.Host.Source}
		}
	}
	rec.rule = d.Rule
	if !d.Allow {
		rec.allow, rec.reason = false, "request rule ("+d.Source+")"
		return http.StatusForbidden
	}
	return 0
}

// inspection is one request on its way through the secrets' steps of
// inspect, each a method that returns 0 or the status to refuse it with.
type inspection struct {
	r   *http.Request
	rec *record
	t   policy.Target
	ex  *policy.Explanation
	sec []*policy.Secret
	// path and query are the URL's, escaped, as the agent sent them.
	path, query string
	// may[i] is where sec[i] may go in this request: nowhere unless it is
	// bound to the host, then where its binding puts it. to is the
	// positions some secret goes in.
	may []policy.Position
	to  policy.Position
	// needles are what would make the request a leak; bodyNeedles those of
	// them that would in its body.
	needles, bodyNeedles []needle
	// sv is the SigV4 request to sign again with the real keys, or nil.
	sv *sigv4Request
	// body is the body as read (nil: not read), whole whether it is all of
	// it.
	body  []byte
	whole bool
	// used names the secrets put in.
	used []string
}

// newInspection works out where each secret may go in r and what would be
// a leak. What comes back is masked (maskResponse), which needs it
// unencoded, so r asks for identity.
func newInspection(r *http.Request, rec *record, t policy.Target, ex *policy.Explanation, sec []*policy.Secret) *inspection {
	r.Header.Set("Accept-Encoding", "identity")
	in := &inspection{r: r, rec: rec, t: t, ex: ex, sec: sec, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
		may: make([]policy.Position, len(sec))}
	for i, x := range sec {
		if ex.Bound(x.Name) {
			in.may[i] = x.Matcher().Place.Allowed(r.Method, in.path)
		}
		in.to |= in.may[i]
	}
	in.needles = leakNeedles(sec, func(i int) bool { return ex.Bound(sec[i].Name) }, func(i int) policy.Position { return in.may[i] })
	for _, n := range in.needles {
		if n.not&policy.InBody != 0 {
			in.bodyNeedles = append(in.bodyNeedles, n)
		}
	}
	return in
}

// leakError is the error of needle n found in position pos.
func (in *inspection) leakError(n needle, pos policy.Position) error {
	le := &leakError{n: n, host: in.rec.host, pos: pos}
	for _, x := range in.sec {
		if x.Name == n.secret && in.ex.Bound(x.Name) {
			le.bound, le.place = true, x.Matcher().Place
		}
	}
	return le
}

// leak refuses the request for needle n found in position pos.
func (in *inspection) leak(n needle, pos policy.Position) int {
	rec := in.rec
	rec.allow, rec.leak = false, n.secret
	rec.rule = "leak-detection"
	rec.reason = in.leakError(n, pos).Error()
	return http.StatusForbidden
}

// headLeaks looks for leaks in the method, the headers, the path and the
// query, as the agent sent them: before anything is put in.
func (in *inspection) headLeaks() int {
	r := in.r
	if n, ok := findLeak(r.Method, in.needles, policy.InMethod); ok {
		return in.leak(n, policy.InMethod)
	}
	for name, vs := range r.Header {
		if n, ok := findLeak(name, in.needles, policy.InHeader); ok {
			return in.leak(n, policy.InHeader)
		}
		for _, v := range vs {
			if n, ok := findLeak(v, in.needles, policy.InHeader); ok {
				return in.leak(n, policy.InHeader)
			}
		}
	}
	if n, ok := findLeak(in.path, in.needles, policy.InPath); ok {
		return in.leak(n, policy.InPath)
	}
	if n, ok := findLeak(in.query, in.needles, policy.InQuery); ok {
		return in.leak(n, policy.InQuery)
	}
	return 0
}

// sigv4 checks a SigV4 request to a host an aws-sigv4 binding signs for
// (sigv4.go): sign signs it again with the real keys once it is otherwise
// final.
func (in *inspection) sigv4() int {
	keyID, secretKey := sigv4Keys(in.sec)
	if keyID == nil || !strings.HasPrefix(in.r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
		return 0
	}
	for i, x := range in.sec {
		if x == keyID && in.may[i] != 0 {
			var err error
			if in.sv, err = sigv4Check(in.r, keyID, secretKey); err != nil {
				in.rec.allow, in.rec.rule, in.rec.reason = false, "aws-sigv4", err.Error()
				return http.StatusForbidden
			}
		}
	}
	return 0
}

// readBody reads the body when a secret may go in it, a needle would be a
// leak there or it is to be signed: whole up to maxSubstBody (maxSignBody
// to sign), and looks for leaks in a body read whole. A body to sign that
// is longer is refused.
func (in *inspection) readBody() int {
	r, rec := in.r, in.rec
	limit := int64(maxSubstBody)
	if in.sv != nil {
		limit = maxSignBody
	}
	in.whole = in.sv != nil && (r.Body == nil || r.Body == http.NoBody)
	if r.Body == nil || r.Body == http.NoBody || in.to&policy.InBody == 0 && len(in.bodyNeedles) == 0 && in.sv == nil {
		return 0
	}
	if r.ContentLength >= 0 && r.ContentLength <= limit || r.ContentLength < 0 {
		b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			rec.err = "read request body: " + err.Error()
			return http.StatusBadRequest
		}
		in.body, in.whole = b, int64(len(b)) <= limit
	}
	if in.sv != nil && !in.whole {
		rec.allow, rec.rule = false, "aws-sigv4"
		rec.reason = fmt.Sprintf("the body is longer than %d MiB: the proxy signs only a body it hashes itself", maxSignBody>>20)
		return http.StatusForbidden
	}
	if in.whole {
		if n, ok := findLeak(string(in.body), in.bodyNeedles, policy.InBody); ok {
			return in.leak(n, policy.InBody)
		}
	}
	return 0
}

// boundIn are the secrets that may go in position pos.
func (in *inspection) boundIn(pos policy.Position) []*policy.Secret {
	var out []*policy.Secret
	for i, x := range in.sec {
		if in.may[i]&pos != 0 {
			out = append(out, x)
		}
	}
	return out
}

// substitute puts the bound secrets in, each where it may: headers, the
// path, the query, and a body read whole.
func (in *inspection) substitute() int {
	if in.to == 0 {
		return 0
	}
	r := in.r
	if xs := in.boundIn(policy.InHeader); xs != nil {
		for name, vs := range r.Header {
			for i, v := range vs {
				nv, u := substituteHeader(name, v, xs)
				vs[i] = nv
				in.used = append(in.used, u...)
			}
		}
	}
	if xs := in.boundIn(policy.InPath); xs != nil {
		if np, u := substituteURL(in.path, xs, pathEscape); u != nil {
			if err := setEscapedPath(r, np); err != nil {
				in.rec.err = err.Error()
				return http.StatusBadRequest
			}
			in.used = append(in.used, u...)
		}
	}
	if xs := in.boundIn(policy.InQuery); xs != nil {
		if nq, u := substituteURL(in.query, xs, policy.URLEscape); u != nil {
			r.URL.RawQuery = nq
			in.used = append(in.used, u...)
		}
	}
	if xs := in.boundIn(policy.InBody); xs != nil && in.whole && in.body != nil {
		nb, u := substituteBody(in.body, r.Header.Get("Content-Type"), xs)
		in.body = nb
		in.used = append(in.used, u...)
	}
	return 0
}

// putBody gives the request its body back: the one read whole, or the
// part read followed by the rest; a body not read whole is scanned for
// leaks as it streams.
func (in *inspection) putBody() int {
	r := in.r
	switch {
	case in.whole && in.body != nil:
		r.Body = io.NopCloser(bytes.NewReader(in.body))
		r.ContentLength = int64(len(in.body))
		r.TransferEncoding = nil
		r.Header.Del("Content-Length")
	case in.body != nil: // longer than maxSubstBody: the read part, then the rest
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(in.body), r.Body), r.Body}
	}
	if !in.whole && r.Body != nil && r.Body != http.NoBody && len(in.bodyNeedles) > 0 {
		// Kept across reads: a needle written with every byte escaped.
		r.Body = &scanBody{rc: r.Body, needles: in.bodyNeedles, keep: 3*maxNeedle(in.bodyNeedles) - 1,
			leak: func(n needle) error { return in.leakError(n, policy.InBody) }}
	}
	return 0
}

// sign signs a SigV4 request again with the real keys (sv from sigv4).
func (in *inspection) sign() int {
	if in.sv == nil {
		return 0
	}
	scheme := "http"
	if in.t.Connect {
		scheme = "https"
	}
	if err := in.sv.sign(in.r, in.body, scheme, (&route{Target: in.t}).authority()); err != nil {
		in.rec.allow, in.rec.rule, in.rec.reason = false, "aws-sigv4", err.Error()
		return http.StatusForbidden
	}
	in.used = append(in.used, in.sv.keyID.Name, in.sv.secretKey.Name)
	return 0
}

// methodOverride names a header that asks a server to take the request as
// another method, which request rules could not judge.
func methodOverride(h http.Header) string {
	for _, k := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"} {
		if h.Get(k) != "" {
			return k
		}
	}
	return ""
}

// setEscapedPath sets r's path from its escaped form.
func setEscapedPath(r *http.Request, escaped string) error {
	p, err := pathUnescape(escaped)
	if err != nil {
		return err
	}
	r.URL.Path, r.URL.RawPath = p, escaped
	if r.URL.EscapedPath() != escaped {
		r.URL.RawPath = ""
	}
	return nil
}

func pathUnescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) {
				return "", errors.New("invalid escape in path")
			}
			c, ok := policy.Unhex2(s[i+1], s[i+2])
			if !ok {
				return "", errors.New("invalid escape in path")
			}
			b.WriteByte(c)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

func dedupe(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// scanBody passes a request body through, failing the read (and with it
// the request) when a needle appears, also across two reads: it keeps the
// last keep bytes it let through and looks at them with the next ones.
type scanBody struct {
	rc      io.ReadCloser
	needles []needle
	keep    int
	leak    func(needle) error // the error a needle found is
	tail    []byte
	err     error
}

func (b *scanBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		win := append(append([]byte(nil), b.tail...), p[:n]...)
		text := string(win)
		for _, form := range []string{text, decodeAll(text), decodeAll(strings.ReplaceAll(text, "+", " "))} {
			for _, nd := range b.needles {
				if strings.Contains(form, nd.text) {
					b.err = b.leak(nd)
					return 0, b.err
				}
			}
		}
		if len(win) > b.keep {
			win = win[len(win)-b.keep:]
		}
		b.tail = win
	}
	return n, err
}

func (b *scanBody) Close() error { return b.rc.Close() }

// secrets returns the session's bound secrets (none for a proxy started
// without a secrets file).
func (s *Server) secrets() []*policy.Secret {
	if s.opts.Secrets == nil {
		return nil
	}
	return s.opts.Secrets.Secrets
}
