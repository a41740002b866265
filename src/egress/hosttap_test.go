package egress

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHostHeaderMismatchRefused: a plain-HTTP request whose Host header
// names something other than its URL is refused; equivalent spellings are
// not a mismatch; request bodies cannot confuse the check.
func TestHostHeaderMismatchRefused(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	p := tg.port
	code, body := e.raw(t, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", p))
	if code != 400 || !strings.Contains(body, "Host header") {
		t.Fatalf("mismatch: %d %s", code, body)
	}
	tg.assertUntouched(t)

	smuggle := "0\r\n\r\nGET http://allowed.test:%[1]d/x HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	req := fmt.Sprintf("GET http://allowed.test:%[1]d/1 HTTP/1.1\r\nHost: ALLOWED.test.:%[1]d\r\n\r\n"+
		// a chunked body that looks like a request with a bad Host
		"POST http://allowed.test:%[1]d/2 HTTP/1.1\r\nHost: allowed.test:%[1]d\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"%[2]x\r\n%[3]s\r\n0\r\n\r\n"+
		// a Content-Length body that does the same
		"POST http://allowed.test:%[1]d/3 HTTP/1.1\r\nHost: allowed.test:%[1]d\r\nContent-Length: %[4]d\r\n\r\n%[3]s"+
		"GET http://allowed.test:%[1]d/4 HTTP/1.1\r\nHost: other.test:%[1]d\r\n\r\n"+
		"GET http://allowed.test:%[1]d/5 HTTP/1.1\r\nHost: allowed.test:%[1]d\r\nConnection: close\r\n\r\n",
		p, len(fmt.Sprintf(smuggle, p)), fmt.Sprintf(smuggle, p), len(fmt.Sprintf(smuggle, p)))
	codes := pipeline(t, e.addr, req, 4)
	if fmt.Sprint(codes) != "[200 200 200 400]" {
		t.Fatalf("statuses %v, want [200 200 200 400]", codes)
	}
	if n := tg.requests.Load(); n != 3 {
		t.Fatalf("target served %d requests, want 3", n)
	}
	// Default port: URL without a port and Host with :80 agree.
	if got := hostMatches("allowed.test:80", "allowed.test", 80); !got {
		t.Fatal("allowed.test:80 vs allowed.test")
	}
	if got := hostMatches("[::1]", "::1", 80); !got {
		t.Fatal("[::1] vs ::1")
	}
}

// TestHostTapLargeBody: a body far larger than a head, arriving in the same
// read as its head, keeps the tap on track.
func TestHostTapLargeBody(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	tap := &hostTap{}
	tap.feed([]byte(fmt.Sprintf("POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%sGET http://b/ HTTP/1.1\r\nHost: b\r\n\r\n", len(body), body)))
	if tap.lost || len(tap.queue) != 2 || tap.queue[1].value != "b" {
		t.Fatalf("lost=%v queue=%v", tap.lost, tap.queue)
	}
}

// TestOptionsStarKeepsTapAligned: "OPTIONS *" reaches the proxy's handler
// (refused as a non-proxy request), so the next request's Host is checked
// against its own head.
func TestOptionsStarKeepsTapAligned(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	req := fmt.Sprintf("OPTIONS * HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n"+
		"GET http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\nConnection: close\r\n\r\n", tg.port)
	codes := pipeline(t, e.addr, req, 2)
	if codes[0] != 404 || codes[1] != 200 {
		t.Fatalf("statuses %v, want [404 200]", codes)
	}
}

// TestHostTapAfterRefusedVersion: a request net/http passes on but the proxy
// refuses for its version (PRI * HTTP/2.0 with headers) still claims its
// head's Host, and its connection is closed: a request behind it is never
// compared with the refused request's Host and never forwarded.
func TestHostTapAfterRefusedVersion(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	p := tg.port
	req := fmt.Sprintf("PRI * HTTP/2.0\r\nHost: allowed.test:%[1]d\r\n\r\n"+
		"GET http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: denied.test:%[1]d\r\n\r\n", p)
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, req)
	all, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(all), "HTTP/1.1 505") || strings.Contains(string(all), "HTTP/1.1 200") {
		t.Fatalf("answers %q: want the 505 alone", all)
	}
	tg.assertUntouched(t)
}
