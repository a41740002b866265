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
// leak detection (a placeholder where its binding does not put it), secret
// substitution where it does, and SigV4 signing for an aws-sigv4 binding. It changes r in place (headers,
// URL, body) and returns 0, or the status to refuse it with (rec says why).
func (s *Server) inspect(r *http.Request, rec *record, t policy.Target, ex *policy.Explanation) int {
	rec.path = r.URL.Path
	// Request trailers are not inspected: none is sent on.
	r.Trailer = nil
	sec := s.secrets()
	hr := ex.Rules
	// An upgraded connection carries bytes the proxy does not read: refused
	// inside an intercepted tunnel, and on the plain path wherever rules or
	// secrets apply.
	if (t.Connect || hr != nil || len(sec) > 0) && r.Header.Get("Upgrade") != "" {
		rec.allow, rec.rule = false, "upgrade"
		rec.reason = "a protocol upgrade would carry bytes the proxy does not inspect"
		return http.StatusForbidden
	}
	if hr != nil {
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
	}
	if len(sec) == 0 {
		return 0
	}
	// What comes back is masked (maskResponse), which needs it unencoded.
	r.Header.Set("Accept-Encoding", "identity")
	path, query := r.URL.EscapedPath(), r.URL.RawQuery
	// Where each secret may go in this request: nowhere unless it is bound
	// to the host, then where its binding puts it.
	var mayBuf [8]policy.Position
	may := mayBuf[:0]
	var to policy.Position // the positions some secret goes in
	for _, x := range sec {
		m := policy.Position(0)
		if ex.Bound(x.Name) {
			m = x.Matcher().Place.Allowed(r.Method, path)
		}
		may = append(may, m)
		to |= m
	}
	needles := leakNeedles(sec, func(i int) bool { return ex.Bound(sec[i].Name) }, func(i int) policy.Position { return may[i] })
	leakErr := func(n needle, pos policy.Position) error {
		le := &leakError{n: n, host: rec.host, pos: pos}
		for _, x := range sec {
			if x.Name == n.secret && ex.Bound(x.Name) {
				le.bound, le.place = true, x.Matcher().Place
			}
		}
		return le
	}
	leak := func(n needle, pos policy.Position) int {
		le := leakErr(n, pos)
		rec.allow, rec.leak = false, n.secret
		rec.rule = "leak-detection"
		rec.reason = le.Error()
		return http.StatusForbidden
	}
	// Leaks first, on the request as the agent sent it.
	if n, ok := findLeak(r.Method, needles, policy.InMethod); ok {
		return leak(n, policy.InMethod)
	}
	for name, vs := range r.Header {
		if n, ok := findLeak(name, needles, policy.InHeader); ok {
			return leak(n, policy.InHeader)
		}
		for _, v := range vs {
			if n, ok := findLeak(v, needles, policy.InHeader); ok {
				return leak(n, policy.InHeader)
			}
		}
	}
	if n, ok := findLeak(path, needles, policy.InPath); ok {
		return leak(n, policy.InPath)
	}
	if n, ok := findLeak(query, needles, policy.InQuery); ok {
		return leak(n, policy.InQuery)
	}
	// A SigV4 request to a host an aws-sigv4 binding signs for is signed
	// again with the real keys (sigv4.go), once it is otherwise final.
	var sv *sigv4Request
	if keyID, secretKey := sigv4Keys(sec); keyID != nil && strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
		for i, x := range sec {
			if x == keyID && may[i] != 0 {
				var err error
				if sv, err = sigv4Check(r, keyID, secretKey); err != nil {
					rec.allow, rec.rule, rec.reason = false, "aws-sigv4", err.Error()
					return http.StatusForbidden
				}
			}
		}
	}
	var bodyNeedles []needle
	for _, n := range needles {
		if n.not&policy.InBody != 0 {
			bodyNeedles = append(bodyNeedles, n)
		}
	}
	limit := int64(maxSubstBody)
	if sv != nil {
		limit = maxSignBody
	}
	var body []byte
	whole := sv != nil && (r.Body == nil || r.Body == http.NoBody)
	if r.Body != nil && r.Body != http.NoBody && (to&policy.InBody != 0 || len(bodyNeedles) > 0 || sv != nil) {
		if r.ContentLength >= 0 && r.ContentLength <= limit || r.ContentLength < 0 {
			b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				rec.err = "read request body: " + err.Error()
				return http.StatusBadRequest
			}
			body, whole = b, int64(len(b)) <= limit
		}
		if sv != nil && !whole {
			rec.allow, rec.rule = false, "aws-sigv4"
			rec.reason = fmt.Sprintf("the body is longer than %d MiB: the proxy signs only a body it hashes itself", maxSignBody>>20)
			return http.StatusForbidden
		}
		if whole {
			if n, ok := findLeak(string(body), bodyNeedles, policy.InBody); ok {
				return leak(n, policy.InBody)
			}
		}
	}
	// Then the bound secrets go in, each where it may.
	var used []string
	if to != 0 {
		in := func(pos policy.Position) []*policy.Secret {
			var out []*policy.Secret
			for i, x := range sec {
				if may[i]&pos != 0 {
					out = append(out, x)
				}
			}
			return out
		}
		if xs := in(policy.InHeader); xs != nil {
			for name, vs := range r.Header {
				for i, v := range vs {
					nv, u := substituteHeader(name, v, xs)
					vs[i] = nv
					used = append(used, u...)
				}
			}
		}
		if xs := in(policy.InPath); xs != nil {
			if np, u := substituteURL(path, xs, pathEscape); u != nil {
				if err := setEscapedPath(r, np); err != nil {
					rec.err = err.Error()
					return http.StatusBadRequest
				}
				used = append(used, u...)
			}
		}
		if xs := in(policy.InQuery); xs != nil {
			if nq, u := substituteURL(query, xs, policy.URLEscape); u != nil {
				r.URL.RawQuery = nq
				used = append(used, u...)
			}
		}
		if xs := in(policy.InBody); xs != nil && whole && body != nil {
			nb, u := substituteBody(body, r.Header.Get("Content-Type"), xs)
			body = nb
			used = append(used, u...)
		}
	}
	switch {
	case whole && body != nil:
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
		r.Header.Del("Content-Length")
	case body != nil: // longer than maxSubstBody: the read part, then the rest
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	}
	if !whole && r.Body != nil && r.Body != http.NoBody && len(bodyNeedles) > 0 {
		// Kept across reads: a needle written with every byte escaped.
		r.Body = &scanBody{rc: r.Body, needles: bodyNeedles, keep: 3*maxNeedle(bodyNeedles) - 1,
			leak: func(n needle) error { return leakErr(n, policy.InBody) }}
	}
	if sv != nil {
		scheme := "http"
		if t.Connect {
			scheme = "https"
		}
		if err := sv.sign(r, body, scheme, (&route{Target: t}).authority()); err != nil {
			rec.allow, rec.rule, rec.reason = false, "aws-sigv4", err.Error()
			return http.StatusForbidden
		}
		used = append(used, sv.keyID.Name, sv.secretKey.Name)
	}
	rec.secrets = dedupe(used)
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
