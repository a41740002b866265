package egress

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// auditLineOf builds a line whose every string field is s.
func auditLineOf(s string, n int64) auditLine {
	return auditLine{Time: time.Date(2026, 11, 23, 16, 30, 59, int(n%1e9+1e9)%1e9, time.UTC), Actor: s, Event: s, Subject: s, Outcome: s,
		Detail: auditDetail{Client: s, Method: s, IP: s, Rule: s, Reason: s, Error: s, BytesUp: n, BytesDown: -n, DurationMS: n / 3}}
}

func checkAuditJSON(t *testing.T, l auditLine) {
	t.Helper()
	want, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.appendJSON(nil); string(got) != string(want) {
		t.Fatalf("appendJSON:\n got %s\nwant %s", got, want)
	}
}

// TestAuditLineJSON: the hand-written encoder writes what encoding/json
// writes, escapes and omitted fields included.
func TestAuditLineJSON(t *testing.T) {
	for _, s := range []string{"", "proxy", `a"b\c`, "<script>&amp;", "tab\there\nnl\rcr\bbs\fff", "\x00\x01\x1f\x7f",
		"ünïcødé 名前", "\xff\xfe bad utf8 \xc3", "line\u2028sep\u2029", "ghp_0123456789abcdefghij0123456789abcdef", "[::1]:443"} {
		checkAuditJSON(t, auditLineOf(s, 12345))
	}
	l := auditLineOf("x", 7)
	l.Detail.Reason, l.Detail.Error = "", ""
	checkAuditJSON(t, l) // omitempty
	s := &Server{}
	rec := &record{start: time.Now(), client: "127.0.0.1:54321", method: "CONNECT", host: "localhost", port: 443, ip: "127.0.0.1", rule: "domain localhost", allow: true, up: 8, down: 64}
	line := s.auditLine(rec)
	checkAuditJSON(t, line)
	if n := testing.AllocsPerRun(100, func() { line.appendJSON(make([]byte, 0, 1024)[:0]) }); n > 1 {
		t.Fatalf("appendJSON: %v allocations, want at most the buffer's", n)
	}
}

func FuzzAuditLineJSON(f *testing.F) {
	for _, s := range []string{"proxy", `"\`, "<>&", "\u2028\xff", "\t\n\x00"} {
		f.Add(s, int64(42))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		checkAuditJSON(t, auditLineOf(s, n))
	})
}

// TestAuditRedacts: a secret-shaped string in what a client sends reaches
// the proxy's audit log only redacted.
func TestAuditRedacts(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	e.tunnel(t, fmt.Sprintf("%s.denied.test:%d", secret, tg.port), "")
	waitFor(2e9, func() bool { return e.srv.ActiveTunnels() == 0 })
	e.srv.Shutdown(t.Context())
	log := readFile(t, e.audit)
	if strings.Contains(log, secret) || !strings.Contains(log, "[REDACTED:github-token]") {
		t.Fatalf("audit log:\n%s", log)
	}
}
