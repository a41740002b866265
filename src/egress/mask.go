package egress

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Masking. The agent never holds a bound secret's value, so nothing the
// proxy hands it may hold one either: what a bound host sends back (a
// stored body read again, a redirect's Location, a cookie, an error the
// proxy quotes) has every value replaced by its placeholder, which the
// agent can then use again as it would the value. The audit log names the
// secret instead. This is one layer: toAgent for text the proxy writes,
// maskResponse for responses of hosts a secret was put in for, toAudit for
// every audit line.

// errCompressedResponse is a response whose body the proxy cannot mask.
var errCompressedResponse = errors.New("the host sent a compressed body though none was asked for; the proxy cannot check it for secrets")

// valueForms are the ways a value appears in what comes back: as is, and
// as the proxy or a server escapes it in a URL or a form.
func valueForms(v string) []string {
	forms := []string{v}
	for _, f := range []string{urlEscape(v), url.QueryEscape(v), url.PathEscape(v)} {
		if f != v {
			forms = append(forms, f)
		}
	}
	return forms
}

func (s *Server) maskWith(text string, repl func(*Secret) string) string {
	for _, x := range s.secrets() {
		for _, f := range valueForms(x.Value) {
			if strings.Contains(text, f) {
				text = strings.ReplaceAll(text, f, repl(x))
			}
		}
	}
	return text
}

// toAgent replaces every secret value in text by its placeholder.
func (s *Server) toAgent(text string) string {
	return s.maskWith(text, func(x *Secret) string { return x.Placeholder })
}

// toAudit replaces every secret value in text by the secret's name.
func (s *Server) toAudit(text string) string {
	return s.maskWith(text, func(x *Secret) string { return "[secret " + x.Name + "]" })
}

// maskResponse replaces the values of secrets in a response's headers and
// body by their placeholders. A body the proxy cannot read (compressed,
// though the request asked for none) is refused: false.
func (s *Server) maskResponse(resp *http.Response) bool {
	if len(s.secrets()) == 0 {
		return true
	}
	s.maskHeader(resp.Header)
	if resp.Body == nil || resp.Body == http.NoBody {
		return true
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return false
	}
	var pairs [][2]string
	longest := 0
	for _, x := range s.secrets() {
		for _, f := range valueForms(x.Value) {
			pairs = append(pairs, [2]string{f, x.Placeholder})
			longest = max(longest, len(f))
		}
	}
	// Trailers arrive with the end of the body: they are masked then,
	// before the body reports its end and they are passed on.
	resp.Body = &maskBody{rc: resp.Body, pairs: pairs, keep: longest - 1, atEnd: func() { s.maskHeader(resp.Trailer) }}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return true
}

// maskHeader replaces the values of secrets in h's values by their
// placeholders.
func (s *Server) maskHeader(h http.Header) {
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = s.toAgent(v)
		}
	}
}

// maskBody replaces values in a streamed body, also across reads: it holds
// back the last keep bytes until it knows they do not begin a value. When
// the body ends it calls atEnd.
type maskBody struct {
	rc    io.ReadCloser
	pairs [][2]string
	keep  int
	atEnd func()
	buf   []byte // read, not yet handed out
	out   []byte // replaced, ready
	eof   bool
	err   error
}

func (b *maskBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.eof {
			if len(b.buf) > 0 {
				b.out, b.buf = b.replace(b.buf), nil
				continue
			}
			return 0, b.err
		}
		chunk := make([]byte, 32<<10)
		n, err := b.rc.Read(chunk)
		b.buf = append(b.buf, chunk[:n]...)
		if err != nil {
			b.eof, b.err = true, err
			b.atEnd()
			continue
		}
		r := b.replace(b.buf)
		// Hand out all but the last keep bytes: they may begin a value.
		cut := max(len(r)-b.keep, 0)
		b.out, b.buf = r[:cut], append([]byte(nil), r[cut:]...)
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *maskBody) replace(x []byte) []byte {
	for _, pr := range b.pairs {
		x = bytes.ReplaceAll(x, []byte(pr[0]), []byte(pr[1]))
	}
	return x
}

func (b *maskBody) Close() error { return b.rc.Close() }
