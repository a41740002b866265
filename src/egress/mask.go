package egress

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// Masking. The agent never holds a bound secret's value, so nothing the
// proxy hands it may hold one either: what a bound host sends back (a
// stored body read again, a redirect's Location, a cookie, an error the
// proxy quotes, the credential reflected) has every value replaced by its
// placeholder, which the agent can then use again as it would the value.
// The audit log names the secret instead. This is one layer: toAgent for
// text the proxy writes, maskResponse for every response the proxy reads
// (headers, body, trailers; informational responses in pipeline.go),
// toAudit for every audit line.
//
// The forms a value is recognised in, and why a binding puts it only in
// credential positions unless it says otherwise, are policy.Masker's
// (src/policy, mask.go).

// buildMasks makes the server's two maskers: to the agent (the
// placeholder, in the same form) and to the audit log (the secret's
// name).
func (s *Server) buildMasks() {
	sec := s.secrets()
	s.agentMask = policy.NewMasker(sec, func(x *policy.Secret, f policy.MaskForm) string {
		if f.KeepLen {
			return f.Of(policy.StandIn(x))
		}
		return f.Of(x.Placeholder)
	})
	s.auditMask = policy.NewMasker(sec, func(x *policy.Secret, _ policy.MaskForm) string { return "[secret " + x.Name + "]" })
}

// toAgent replaces every secret value in text by its placeholder.
func (s *Server) toAgent(text string) string { return s.agentMask.ReplaceString(text) }

// toAudit replaces every secret value in text by the secret's name.
func (s *Server) toAudit(text string) string { return s.auditMask.ReplaceString(text) }

// contentEncodingError is a response whose body is encoded in a way the
// proxy does not decode, so it cannot check it for secrets.
type contentEncodingError struct{ coding string }

func (e *contentEncodingError) Error() string {
	return fmt.Sprintf("the host answered with Content-Encoding %q, which the proxy cannot check for secrets (its requests ask for identity)", e.coding)
}

// maskResponse replaces the values of secrets in a response's headers,
// body and trailers by their placeholders. A response with a
// Content-Encoding other than identity (in any of its Content-Encoding
// headers, anywhere in their lists) is refused: the proxy asks for
// identity and does not decode what it did not ask for.
func (s *Server) maskResponse(resp *http.Response) error {
	if len(s.secrets()) == 0 {
		return nil
	}
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return &contentEncodingError{c}
			}
		}
	}
	s.maskHeader(resp.Header)
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	// Trailers arrive with the end of the body: they are masked then,
	// before the body reports its end and they are passed on.
	resp.Body = &maskBody{rc: resp.Body, m: s.agentMask, keep: s.agentMask.Longest() - 1, atEnd: func() { s.maskHeader(resp.Trailer) }}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
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
// back the last keep bytes until it knows they do not begin a value, so it
// never holds more than one read and keep bytes. When the body ends it
// calls atEnd.
type maskBody struct {
	rc    io.ReadCloser
	m     *policy.Masker
	keep  int
	atEnd func()
	chunk []byte
	buf   []byte // read, not yet handed out
	out   []byte // replaced, ready
	eof   bool
	err   error
}

func (b *maskBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.eof {
			if len(b.buf) > 0 {
				b.out, b.buf = b.m.Replace(b.buf), nil
				continue
			}
			return 0, b.err
		}
		if b.chunk == nil {
			b.chunk = make([]byte, 32<<10)
		}
		n, err := b.rc.Read(b.chunk)
		b.buf = append(b.buf, b.chunk[:n]...)
		if err != nil {
			b.eof, b.err = true, err
			b.atEnd()
			continue
		}
		r := b.m.Replace(b.buf)
		// Hand out all but the last keep bytes: they may begin a value.
		cut := max(len(r)-b.keep, 0)
		b.out, b.buf = r[:cut], append([]byte(nil), r[cut:]...)
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *maskBody) Close() error { return b.rc.Close() }
