package egress

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// FuzzLaunder checks the two properties bound secrets rest on, through
// the real proxy, for any request the agent can write (raw bytes: method,
// target, header lines, body, framing) and any way the bound host hands
// back what it received (the transforms, in the body, a header or a
// trailer):
//
//   - a value reaches only a host it is bound to, and there only in the
//     positions its binding allows: GITHUB_TOKEN (example.com, intercepted)
//     in headers; OTHER_KEY (plain.test, plain HTTP) in headers, and in the
//     path, query and body of requests under /ok/;
//   - nothing the agent receives holds a value, in any form the oracle
//     decodes in one step (revealed, at most one decoding: a host that
//     encodes twice is beyond the masks, docs/egress.md).
//
// In the input, {PH} and {PH2} stand for the placeholders of GITHUB_TOKEN
// and OTHER_KEY, {BASIC} for a Basic credential holding {PH}. The seed
// corpus runs as a unit test, also with -short.
func FuzzLaunder(f *testing.F) {
	for _, s := range []struct {
		target                     uint8
		method, uri, headers, body string
		transform, where           uint8
		pre, suf                   string
	}{
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 0, 0, "", ""},
		{0, "GET", "/", "Authorization: {BASIC}\r\n", "", 11, 0, "x", ""},
		{0, "GET", "/", "X-Api-Key: {PH}\r\nX-Other: {PH}\r\n", "", 9, 1, "", ""},
		{0, "POST", "/store", "Content-Type: application/json\r\n", `{"t":"{PH}"}`, 1, 0, "ab", "cd"},
		{0, "GET", "/q?t={PH}", "", "", 0, 0, "", ""},
		{0, "GET", "/p/{PH}/x", "", "", 0, 0, "", ""},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 6, 2, `{"a":`, "}"},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 13, 0, "k=", "\n"},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 14, 1, "", "=="},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 3, 0, "a b", ""},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 10, 2, "", ""},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 15, 0, "user", ""},
		{0, "GET", "/", "Authorization: Bearer {PH2}\r\n", "", 0, 0, "", ""},
		{0, "PUT", "/", "Transfer-Encoding: chunked\r\n", "5\r\n{PH}\r\n0\r\n\r\n", 0, 0, "", ""},
		{0, "POST", "/", "Content-Length: 4\r\n", "abcdGET /q?t={PH} HTTP/1.1\r\nHost: example.com\r\n\r\n", 0, 0, "", ""},
		{0, "GET", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\nX-T: {PH}\r\n", "", 0, 0, "", ""},
		{0, "{PH}", "/", "", "", 0, 0, "", ""},
		{0, "GET", "/", "X-{PH}: 1\r\n", "", 0, 0, "", ""},
		{0, "GET", "/", "Authorization: Bearer {PH}\r\nX-Http-Method-Override: DELETE\r\n", "", 2, 0, "", ""},
		{1, "GET", "/", "X-Key: {PH2}\r\n", "", 0, 0, "", ""},
		{1, "POST", "/ok/token", "Content-Type: application/x-www-form-urlencoded\r\n", "secret={PH2}", 11, 0, "", ""},
		{1, "POST", "/no/token", "Content-Type: application/x-www-form-urlencoded\r\n", "secret={PH2}", 0, 0, "", ""},
		{1, "GET", "/ok/{PH2}?a={PH2}", "", "", 9, 2, "", ""},
		{1, "GET", "/ok/../x/{PH2}", "", "", 0, 0, "", ""},
		{1, "GET", "/", "Authorization: Bearer {PH}\r\n", "", 0, 0, "", ""},
		{1, "GET", "/x?v={PH}", "", "", 0, 0, "", ""},
		{1, "GET", "/", "Authorization: {BASIC}\r\n", "", 0, 0, "", ""},
	} {
		f.Add(s.target, s.method, s.uri, s.headers, s.body, s.transform, s.where, s.pre, s.suf)
	}
	e := startSecretEnvTB(f, "", func(x *policy.Secret) {
		if x.Name == "OTHER_KEY" {
			x.In, x.Requests = []string{"header", "path", "query", "body"}, []string{"* /ok/"}
		}
	})
	e.srv.opts.Logf = func(string, ...any) {}
	const otherValue = "other-Secret-Value-0123456789"
	// The upstreams record what they receive, its header lines apart, and
	// answer with all of it, transformed as the iteration says.
	var mu sync.Mutex
	var got []received
	var cur struct {
		transform, where uint8
		pre, suf         string
	}
	reflect := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var head bytes.Buffer
		r.Header.Write(&head)
		rest := r.Method + " " + r.RequestURI + "\n" + string(body)
		mu.Lock()
		got = append(got, received{host: r.Host, head: head.String(), rest: rest, uri: r.RequestURI})
		c := cur
		mu.Unlock()
		tr := transforms[int(c.transform)%len(transforms)]
		all := tr.f(c.pre, head.String()+rest, c.suf)
		auth := tr.f(c.pre, r.Header.Get("Authorization")+r.Header.Get("X-Key"), c.suf)
		switch c.where % 3 {
		case 0:
			io.WriteString(w, all)
		case 1:
			w.Header().Set("X-Echo", auth)
			io.WriteString(w, "ok")
		case 2:
			w.Header().Set("Trailer", "X-Late")
			io.WriteString(w, all[:len(all)/2])
			w.(http.Flusher).Flush()
			io.WriteString(w, all[len(all)/2:])
			w.Header().Set("X-Late", auth)
		}
	}
	e.bound.Config.Handler = http.HandlerFunc(reflect)
	e.plain.Config.Handler = http.HandlerFunc(reflect)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+e.ph))

	f.Fuzz(func(t *testing.T, target uint8, method, uri, headers, body string, transform, where uint8, pre, suf string) {
		if len(method)+len(uri)+len(headers)+len(body)+len(pre)+len(suf) > 1<<14 {
			return
		}
		fill := strings.NewReplacer("{PH}", e.ph, "{PH2}", e.ph2, "{BASIC}", basic)
		method, uri, headers, body = fill.Replace(method), fill.Replace(uri), fill.Replace(headers), fill.Replace(body)
		mu.Lock()
		got = nil
		cur.transform, cur.where, cur.pre, cur.suf = transform, where, pre, suf
		mu.Unlock()

		var conn net.Conn
		host := "plain.test:" + e.plainPort()
		target %= 2
		if target == 0 {
			host = "example.com:" + e.boundPort
			tc := tls.Client(dialTunnel(t, e.addr, host), &tls.Config{ServerName: "example.com", RootCAs: e.caPool})
			if err := tc.Handshake(); err != nil {
				t.Fatalf("intercepted handshake: %v", err)
			}
			conn = tc
		} else {
			c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conn = c
			uri = "http://" + host + uri
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		framing := ""
		if !strings.Contains(strings.ToLower(headers), "content-length:") && !strings.Contains(strings.ToLower(headers), "transfer-encoding:") {
			framing = fmt.Sprintf("Content-Length: %d\r\n", len(body))
		}
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%s%sConnection: close\r\n\r\n%s", method, uri, host, headers, framing, body)
		answer, _ := io.ReadAll(conn) // until the proxy closes, or the deadline

		for _, v := range []struct{ name, value string }{{"GITHUB_TOKEN", testValue}, {"OTHER_KEY", otherValue}} {
			if form := revealedUpTo(answer, v.value, 1); form != "" {
				t.Fatalf("the agent received %s's value (%s):\n%q", v.name, form, answer)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range got {
			bound := strings.HasPrefix(r.host, "example.com")
			if form := revealedUpTo([]byte(r.head+r.rest), map[bool]string{true: otherValue, false: testValue}[bound], 1); form != "" {
				t.Fatalf("%s received a value bound elsewhere (%s):\n%s%s", r.host, form, r.head, r.rest)
			}
			v, ok := testValue, true
			if !bound {
				v, ok = otherValue, strings.HasPrefix(r.uri, "/ok/")
			}
			if form := revealedUpTo([]byte(r.rest), v, 1); form != "" && !ok {
				t.Fatalf("%s received its value outside the headers, where its binding does not put it (%s):\n%s", r.host, form, r.rest)
			}
		}
	})
}

// received is one request an upstream of FuzzLaunder received.
type received struct {
	host, head, rest, uri string
}
