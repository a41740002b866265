package egress

// Laundering: a secret's value handed back by a bound host in a form the
// proxy must still recognise (masking in depth), and compressed bodies
// the proxy must refuse. The oracle (revealed) decodes what the agent gets
// independently of the masks: it is the judge of every test here and of
// FuzzLaunder.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// revealed names the form in which b holds v, or "": as it is in any
// letter case, reversed, percent-decoded, JSON-unescaped, hex-decoded,
// base64-decoded (standard or URL-safe, at any offset), gunzipped; each
// decoding also looked into again.
func revealed(b []byte, v string) string { return revealedUpTo(b, v, 2) }

// revealedUpTo is revealed with at most maxDepth decodings in a row.
func revealedUpTo(b []byte, v string, maxDepth int) string {
	return revealedDepth(b, strings.ToLower(v), 0, maxDepth)
}

func revealedDepth(b []byte, v string, depth, maxDepth int) string {
	if depth > maxDepth || len(b) < len(v)/2 {
		return ""
	}
	low := strings.ToLower(string(b))
	rev := []byte(v)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	switch {
	case strings.Contains(low, v):
		return "as is"
	case strings.Contains(low, string(rev)):
		return "reversed"
	case strings.Contains(strings.ToLower(decodeAll(strings.ReplaceAll(low, "+", " "))), v):
		return "percent-encoded"
	case strings.Contains(strings.ToLower(decodeAll(low)), v):
		return "percent-encoded"
	case strings.Contains(strings.ToLower(jsonUnescape(string(b))), v):
		return "JSON-escaped"
	}
	var decoded [][]byte
	for _, run := range charRuns(low, "0123456789abcdef") {
		for off := 0; off < 2 && off < len(run); off++ {
			r := run[off:]
			if d, err := hex.DecodeString(r[:len(r)/2*2]); err == nil {
				decoded = append(decoded, d)
			}
		}
	}
	for _, alpha := range []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"} {
		enc := base64.NewEncoding(alpha).WithPadding(base64.NoPadding)
		for _, run := range charRuns(string(b), alpha) {
			for off := 0; off < 4 && off < len(run); off++ {
				r := run[off:]
				if len(r)%4 == 1 {
					r = r[:len(r)-1]
				}
				if d, err := enc.DecodeString(r); err == nil {
					decoded = append(decoded, d)
				}
			}
		}
	}
	if i := bytes.Index(b, []byte{0x1f, 0x8b}); i >= 0 {
		if z, err := gzip.NewReader(bytes.NewReader(b[i:])); err == nil {
			if d, _ := io.ReadAll(io.LimitReader(z, 1<<20)); len(d) > 0 {
				decoded = append(decoded, d)
			}
		}
	}
	for _, d := range decoded {
		if form := revealedDepth(d, v, depth+1, maxDepth); form != "" {
			return "decoded, then " + form
		}
	}
	return ""
}

// jsonUnescape decodes the JSON string escapes in s (a whole document or
// not), leaving everything else.
func jsonUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == 'u' && i+6 <= len(s) {
				if n, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil {
					b.WriteRune(rune(n))
					i += 5
					continue
				}
			}
			if c := strings.IndexByte(`"\/bfnrt`, s[i+1]); c >= 0 {
				b.WriteByte("\"\\/\b\f\n\r\t"[c])
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// charRuns splits s into its maximal runs of characters from set.
func charRuns(s, set string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		in := i < len(s) && strings.IndexByte(set, s[i]) >= 0
		if in && start < 0 {
			start = i
		}
		if !in && start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}

// transforms are what a host may do to a value before it hands it back,
// as the masks must undo; each is applied to a prefix, the value and a
// suffix together, so encodings put the value at every alignment.
var transforms = []struct {
	name string
	f    func(pre, v, suf string) string
}{
	{"as is", func(p, v, s string) string { return p + v + s }},
	{"upper", func(p, v, s string) string { return strings.ToUpper(p + v + s) }},
	{"lower", func(p, v, s string) string { return strings.ToLower(p + v + s) }},
	{"query-escaped", func(p, v, s string) string { return url.QueryEscape(p + v + s) }},
	{"path-escaped", func(p, v, s string) string { return url.PathEscape(p + v + s) }},
	{"percent-escaped lower", func(p, v, s string) string { return strings.ToLower(policy.URLEscape(p + v + s)) }},
	{"json", func(p, v, s string) string { b, _ := json.Marshal(p + v + s); return string(b) }},
	{"json slash", func(p, v, s string) string {
		b, _ := json.Marshal(p + v + s)
		return strings.ReplaceAll(string(b), "/", `\/`)
	}},
	{"json all escaped", func(p, v, s string) string { return p + policy.JSONEscapeAll(v) + s }},
	{"hex", func(p, v, s string) string { return hex.EncodeToString([]byte(p + v + s)) }},
	{"HEX", func(p, v, s string) string { return strings.ToUpper(hex.EncodeToString([]byte(p + v + s))) }},
	{"base64", func(p, v, s string) string { return base64.StdEncoding.EncodeToString([]byte(p + v + s)) }},
	{"base64 raw", func(p, v, s string) string { return base64.RawStdEncoding.EncodeToString([]byte(p + v + s)) }},
	{"base64url", func(p, v, s string) string { return base64.URLEncoding.EncodeToString([]byte(p + v + s)) }},
	{"base64url raw", func(p, v, s string) string { return base64.RawURLEncoding.EncodeToString([]byte(p + v + s)) }},
	{"reversed", func(p, v, s string) string { return reverse(p + v + s) }},
	{"reversed upper", func(p, v, s string) string { return strings.ToUpper(reverse(p + v + s)) }},
	{"basic credential", func(p, v, s string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(p+":"+v)) + s
	}},
}

// reverse is s with its bytes in reverse order.
func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// chunkReader returns its text n bytes per read.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := min(r.n, len(r.s), len(p))
	copy(p, r.s[:k])
	r.s = r.s[k:]
	return k, nil
}

func (r *chunkReader) Close() error { return nil }

// maskServer is a Server with the masks of secrets and nothing else.
func maskServer(secrets ...*policy.Secret) *Server {
	s := &Server{opts: Options{Secrets: &policy.SessionSecrets{Secrets: secrets}}}
	s.buildMasks()
	return s
}

// TestMaskInDepth: every transform of the value, at every alignment,
// streamed in reads of any size, comes out without the value in any form
// the oracle decodes; as written it comes out as the placeholder, hex and
// base64 as the placeholder encoded alike.
func TestMaskInDepth(t *testing.T) {
	special := "p@ss/w0rd<&>\"q\\z:~ %0123456789" // letters are folded in ASCII only (docs/egress.md)
	phSpecial := "hobbs_ph_specialplaceholder0123456789abc"
	ph, _ := policy.NewPlaceholder(testValue)
	short := "abc12"
	s := maskServer(
		&policy.Secret{Binding: policy.Binding{Name: "GITHUB_TOKEN"}, Placeholder: ph, Value: testValue},
		&policy.Secret{Binding: policy.Binding{Name: "PASSWORD"}, Placeholder: phSpecial, Value: special},
		&policy.Secret{Binding: policy.Binding{Name: "PIN"}, Placeholder: "hobbs_ph_shortplaceholder01234567", Value: short},
	)
	for _, v := range []string{testValue, special} {
		for _, tr := range transforms {
			for _, pre := range []string{"", "a", "ab", "abc", "k=\n"} {
				text := "<<" + tr.f(pre, v, "|end") + ">>"
				for _, n := range []int{1, 3, 7, 64, 1 << 20} {
					out := readAllMasked(t, s, text, n)
					if form := revealed([]byte(out), v); form != "" {
						t.Fatalf("%s, prefix %q, reads of %d: the value comes out (%s):\nin  %q\nout %q", tr.name, pre, n, form, text, out)
					}
				}
			}
		}
	}
	// Round trips: the agent can use what it gets as it would the value.
	for _, tc := range []struct{ in, want string }{
		{"x " + testValue + " y", "x " + ph + " y"},
		{strings.ToUpper(testValue), ph},
		{hex.EncodeToString([]byte(testValue)), hex.EncodeToString([]byte(ph))},
		{base64.StdEncoding.EncodeToString([]byte(testValue)), base64.StdEncoding.EncodeToString([]byte(ph))},
		{url.QueryEscape(special), url.QueryEscape(phSpecial)},
		{"<" + reverse(testValue) + ">", "<" + reverse(ph) + ">"},
		{strings.ToUpper(reverse(special)), reverse(phSpecial)},
		{short + " " + strings.ToUpper(short), "hobbs_ph_shortplaceholder01234567 " + strings.ToUpper(short)}, // a short value only as written
	} {
		if got := readAllMasked(t, s, tc.in, 5); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := s.toAudit("Bearer " + strings.ToUpper(testValue)); got != "Bearer [secret GITHUB_TOKEN]" {
		t.Errorf("audit: %q", got)
	}
}

func readAllMasked(t *testing.T, s *Server, text string, n int) string {
	t.Helper()
	trailers := false
	body := &maskBody{rc: &chunkReader{text, n}, m: s.agentMask, keep: s.agentMask.Longest() - 1, atEnd: func() { trailers = true }}
	out, err := io.ReadAll(body)
	if err != nil || !trailers {
		t.Fatalf("read: %v (end seen %v)", err, trailers)
	}
	return string(out)
}

// ATTACK: the bound host reflects the credential it is sent, transformed,
// in the body, a header and a trailer, as a "create then get" API or a
// debugging endpoint might.
func TestAttackSecretReflectedTransformed(t *testing.T) {
	e, _, _ := attackEnv(t, nil)
	e.bound.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		for _, tr := range transforms {
			if tr.name == r.URL.Query().Get("as") {
				w.Header().Set("Trailer", "X-Late")
				w.Header().Set("X-Echo", tr.f("h:", v, ""))
				w.(http.Flusher).Flush()
				for i, part := range strings.SplitAfter(tr.f("body=", v, "."), "") { // a byte per write
					io.WriteString(w, part)
					if i%5 == 0 {
						w.(http.Flusher).Flush()
					}
				}
				w.Header().Set("X-Late", tr.f("t", v, ""))
			}
		}
	})
	c := e.client()
	for _, tr := range transforms {
		req, _ := http.NewRequest("GET", "https://example.com:"+e.boundPort+"/echo?as="+url.QueryEscape(tr.name), nil)
		req.Header.Set("Authorization", "Bearer "+e.ph)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tr.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var all bytes.Buffer
		resp.Header.Write(&all)
		all.Write(body)
		resp.Trailer.Write(&all)
		if resp.StatusCode != 200 || !strings.Contains(all.String(), "X-Late") {
			t.Fatalf("%s: status %d, no trailer:\n%s", tr.name, resp.StatusCode, all.String())
		}
		if form := revealed(all.Bytes(), testValue); form != "" {
			t.Errorf("%s: the agent got the value (%s):\n%s", tr.name, form, all.String())
		}
	}
}

// ATTACK: a compressed answer the proxy cannot check, announced in a
// second Content-Encoding header or later in a list, or not at all.
func TestAttackSecretContentEncoding(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, s)
		z.Close()
		return b.Bytes()
	}
	e, _, _ := attackEnv(t, nil)
	e.bound.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ae := r.Header.Values("Accept-Encoding"); len(ae) != 1 || ae[0] != "identity" {
			http.Error(w, fmt.Sprintf("Accept-Encoding %q", ae), 400)
			return
		}
		ce := r.URL.Query()["ce"]
		if len(ce) > 0 {
			w.Header()["Content-Encoding"] = ce
		}
		if len(ce) > 0 && !strings.EqualFold(ce[len(ce)-1], "identity") {
			w.Write(gz("data: " + v))
			return
		}
		io.WriteString(w, "data: "+v)
	})
	c := e.client()
	for _, tc := range []struct {
		query string
		code  int
	}{
		{"", 200},
		{"ce=identity", 200},
		{"ce=IDENTITY", 200},
		{"ce=gzip", 502},
		{"ce=identity&ce=gzip", 502},
		{"ce=gzip&ce=identity", 502},
		{"ce=identity,+gzip", 502},
		{"ce=br", 502},
		{"ce=x-custom", 502},
	} {
		req, _ := http.NewRequest("GET", "https://example.com:"+e.boundPort+"/?"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+e.ph)
		req.Header.Set("Accept-Encoding", "gzip, br")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: status %d %q, want %d", tc.query, resp.StatusCode, body, tc.code)
		}
		if form := revealed(body, testValue); form != "" {
			t.Errorf("%s: the agent got the value (%s)", tc.query, form)
		}
		if tc.code == 502 && !strings.Contains(string(body), "Content-Encoding") {
			t.Errorf("%s: the 502 does not say why: %q", tc.query, body)
		}
	}
}

// TestRefusedUpgradeAnswersAtOnce: a refused upgrade whose request
// announces a body it has not sent yet (an h2c upgrade of a POST, whose
// client waits for the 101 before it sends) gets its 403 before the body
// is sent, and the connection is closed after it.
func TestRefusedUpgradeAnswersAtOnce(t *testing.T) {
	e, fb, _ := attackEnv(t, nil)
	hp := "example.com:" + e.boundPort
	for _, framing := range []string{"Content-Length: 10", "Transfer-Encoding: chunked"} {
		for _, up := range []string{"Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA",
			"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="} {
			tc := e.interceptConn(t)
			// The deadline only ends a test that would hang; the check is
			// that the answer comes while the body is still unsent.
			tc.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(tc, "POST /x HTTP/1.1\r\nHost: %s\r\n%s\r\n%s\r\n\r\n", hp, up, framing)
			br := bufio.NewReader(tc)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s, %s: no answer before the body was sent: %v", up[:12], framing, err)
			}
			io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden || !resp.Close {
				t.Errorf("%s, %s: status %d, close %v; want 403 and the connection closed", up[:12], framing, resp.StatusCode, resp.Close)
			}
		}
	}
	if fb.count() != 0 {
		t.Errorf("a refused upgrade reached the host:\n%s", fb.all())
	}
}
