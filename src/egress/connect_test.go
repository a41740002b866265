package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Attacks on how the proxy reads a CONNECT head. Each case sends raw bytes
// and asserts the answer and that the target saw nothing.

// rawResponse writes req on a fresh connection and reads one response
// (status code; 0 when the proxy closed without answering).
func rawResponse(t testing.TB, addr, req string, wait time.Duration) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil {
		return 0, err.Error()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Status + "\n" + string(body)
}

func TestConnectHeadAttacks(t *testing.T) {
	const token = "connect-token"
	good := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("hobbs:"+token)) + "\r\n"
	wrong := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("hobbs:nope")) + "\r\n"
	cases := []struct {
		name string
		req  string // %[1]d: target port, %[2]s: good credentials, %[3]s: wrong credentials
		want []int  // acceptable statuses; 0 = closed without an answer
	}{
		{"denied name", "CONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{403}},
		{"no credentials", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n\r\n", []int{407}},
		{"wrong credentials", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[3]s\r\n", []int{407}},
		{"duplicate credentials, good first", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s%[3]s\r\n", []int{407}},
		{"duplicate credentials, good last", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[3]s%[2]s\r\n", []int{407}},
		{"duplicate identical credentials", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s%[2]s\r\n", []int{407}},
		{"wrong credentials folded onto next line", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\nProxy-Authorization:\r\n " + strings.TrimPrefix(wrong, "Proxy-Authorization: ") + "\r\n", []int{400, 407}},
		{"folded line after good credentials", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n" + strings.TrimSuffix(good, "\r\n") + "\r\n x\r\n\r\n", []int{400, 407}},
		{"absolute-form target", "CONNECT http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400}},
		{"authority with userinfo", "CONNECT allowed.test:%[1]d@denied.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400, 403}},
		{"origin-form target", "CONNECT / HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n%[2]s\r\n", []int{400}},
		{"asterisk target", "CONNECT * HTTP/1.1\r\nHost: allowed.test:%[1]d\r\n%[2]s\r\n", []int{400}},
		{"target with tab", "CONNECT allowed.test\t:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400}},
		{"two spaces before target", "CONNECT  allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400}},
		{"extra field after version", "CONNECT allowed.test:%[1]d HTTP/1.1 x\r\nHost: x\r\n%[2]s\r\n", []int{400, 505}},
		{"HTTP/2 version", "CONNECT allowed.test:%[1]d HTTP/2.0\r\nHost: x\r\n%[2]s\r\n", []int{400, 505}},
		{"no version", "CONNECT allowed.test:%[1]d\r\nHost: x\r\n%[2]s\r\n", []int{400}},
		{"lower-case method", "connect allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400, 403, 404, 405}},
		{"two Host headers", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\nHost: y\r\n%[2]s\r\n", []int{400}},
		{"NUL in a header value", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n%[2]s\r\n", []int{400}},
		{"space before colon", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\nProxy-Authorization : Basic x\r\n\r\n", []int{400}},
		{"bare LF line ends, denied", "CONNECT denied.test:%[1]d HTTP/1.1\nHost: x\n%[2]s\n", []int{403, 400}},
		{"bare LF line ends, wrong credentials", "CONNECT allowed.test:%[1]d HTTP/1.1\nHost: x\n" + strings.TrimSuffix(wrong, "\r\n") + "\n\n", []int{407, 400}},
		{"header line without colon", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\nbogus\r\n%[2]s\r\n", []int{400}},
		{"request smuggled in a header", "CONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\nX: \rCONNECT allowed.test:%[1]d HTTP/1.1\r\n%[2]s\r\n", []int{400, 403}},
		{"Content-Length on CONNECT, denied", "CONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n%[2]s\r\nhello", []int{403, 400}},
		{"oversized request line", "CONNECT allowed.test:%[1]d" + strings.Repeat("a", 70<<10) + " HTTP/1.1\r\nHost: x\r\n%[2]s\r\n", []int{400, 431, 0}},
		{"oversized headers", "CONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 80) + "%[2]s\r\n", []int{431, 400, 0}},
		{"big head, denied", "CONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 8<<10) + "\r\n%[2]s\r\n", []int{403}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own proxy and target
			tg := newTarget(t, "127.0.0.1")
			e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.AuthToken = token })
			req := fmt.Sprintf(c.req, tg.port, good, wrong)
			code, body := rawResponse(t, e.addr, req, 5*time.Second)
			ok := false
			for _, w := range c.want {
				ok = ok || code == w
			}
			if !ok {
				t.Fatalf("status %d, want one of %v: %s", code, c.want, body)
			}
			tg.assertUntouched(t)
		})
	}
}

// The positive control for the cases above: the same head with one good
// credential is served, also when it is big or has no Host.
func TestConnectPositiveControls(t *testing.T) {
	const token = "connect-token"
	good := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("hobbs:"+token)) + "\r\n"
	for name, extra := range map[string]string{
		"plain":                 "",
		"big head":              "X-Pad: " + strings.Repeat("p", 8<<10) + "\r\n",
		"HTTP/1.0 without Host": "",
		"HTTP/1.1 without Host": "", // net/http does not require Host on CONNECT either
	} {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(t, "127.0.0.1")
			e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.AuthToken = token })
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			switch name {
			case "HTTP/1.0 without Host":
				fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.0\r\n%s\r\n", tg.port, good)
			case "HTTP/1.1 without Host":
				fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n%s\r\n", tg.port, good)
			default:
				fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n%s%s\r\n", tg.port, extra, good)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
			all, _ := io.ReadAll(br)
			if !strings.Contains(string(all), "target ok") {
				t.Fatalf("through the tunnel: %q", all)
			}
		})
	}
}

// A client that sends its CONNECT head byte by byte, never idle for as long
// as the header timeout but never finishing the head, is cut off without
// reaching the target (the timeout bounds the whole head, not each read); a
// head split over a few writes is served (the proxy waits for a whole head).
func TestConnectSlowloris(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.HeaderTimeout = 300 * time.Millisecond })

	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type result struct {
		b   []byte
		err error
	}
	cut := make(chan result, 1)
	go func() {
		// A safety net: a proxy that only bounds each read never cuts
		// this client off, and the test fails here.
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(c)
		cut <- result{b, err}
	}()
	slow := fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\nX-Pad: ", tg.port) // never ends
	var r result
	for i, waiting := 0, true; waiting; i++ {
		b := byte('p')
		if i < len(slow) {
			b = slow[i]
		}
		c.Write([]byte{b}) // once the proxy has closed, the reader sees it
		select {
		case r = <-cut:
			waiting = false
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Closed: with nothing, or with net/http's 400 for a head cut short,
	// never with an answer to the head.
	if isTimeout(r.err) || (len(r.b) != 0 && !strings.HasPrefix(string(r.b), "HTTP/1.1 400 ")) {
		t.Fatalf("slow head not cut off: %q, %v", r.b, r.err)
	}
	tg.assertUntouched(t)

	// The head split over a few writes is served. (By a proxy with the
	// default header timeout: the pauses between the writes must not
	// depend on how busy the machine is.)
	e2 := startProxy(t, basePolicy(tg.port), nil)
	head := fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", tg.port)
	c2, err := net.Dial("tcp", e2.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	for _, part := range []string{head[:3], head[3:12], head[12:]} {
		io.WriteString(c2, part)
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c2), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("split head: %v %v", resp, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Bytes pipelined behind a refused CONNECT never reach anyone; behind an
// allowed one they are the tunnel's first bytes, also when the head and
// those bytes arrive in one segment with a second CONNECT among them (that
// second CONNECT is tunnel payload, not a request the proxy serves).
func TestConnectPipelined(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\n\r\nCONNECT allowed.test:%[1]d HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", tg.port)
	all, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(all), "HTTP/1.1 403") || strings.Count(string(all), "HTTP/1.1") != 1 {
		t.Fatalf("pipelined after a refusal: %q", all)
	}
	tg.assertUntouched(t)

	// a plain-HTTP request followed by a CONNECT on the same connection:
	// the CONNECT is checked too
	c2, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c2, "GET http://denied.test:%[1]d/ HTTP/1.1\r\nHost: denied.test:%[1]d\r\n\r\nCONNECT denied.test:%[1]d HTTP/1.1\r\nHost: x\r\n\r\n", tg.port)
	br := bufio.NewReader(c2)
	for i, want := range []string{"GET", "CONNECT"} {
		resp, err := http.ReadResponse(br, &http.Request{Method: want})
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 403 {
			t.Fatalf("%s after GET: %d", want, resp.StatusCode)
		}
	}
	tg.assertUntouched(t)
}

// Shutdown: a connection still sending its head is closed at once, an open
// tunnel keeps working until its client closes it, and Shutdown returns
// then; new clients are not accepted. (The header timeout and Shutdown's
// deadline are far beyond the test's bounds, which are only safety nets:
// what is checked is that neither had to be reached.)
func TestConnectShutdown(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), func(o *Options) { o.HeaderTimeout = time.Minute })
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	tun := dialTunnel(t, e.addr, auth)
	defer tun.Close()
	slow, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "CONNECT "+auth) // half a head
	time.Sleep(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()

	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Closed at once: with nothing, or with net/http's 400 for a head cut
	// short, never with an answer to the head.
	if b, err := io.ReadAll(slow); isTimeout(err) || (len(b) != 0 && !strings.HasPrefix(string(b), "HTTP/1.1 400 ")) {
		t.Fatalf("half-sent head not closed on shutdown: %q, %v", b, err)
	}
	if err := httpOverConn(tun); err != nil {
		t.Fatalf("open tunnel cut by shutdown: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned with a tunnel open: %v", err)
	default:
	}
	if c, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", auth)
		b, _ := io.ReadAll(c)
		c.Close()
		if strings.HasPrefix(string(b), "HTTP/1.1 200") {
			t.Fatalf("tunnel opened after Shutdown: %q", b)
		}
	}
	tun.Close()
	select {
	case <-done:
		if ctx.Err() != nil {
			t.Fatal("Shutdown returned at its deadline, not when the last tunnel closed")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return after the last tunnel closed")
	}
}
