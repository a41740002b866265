package egress

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
)

// TestAuditLinesAreEntries: every proxy audit line is an audit.Entry (the
// shape other Hobbs tools read) with the proxy's detail fields.
func TestAuditLinesAreEntries(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), "")
	e.tunnel(t, fmt.Sprintf("denied.test:%d", tg.port), "")
	e.raw(t, fmt.Sprintf("GET http://allowed.test:%[1]d/ HTTP/1.1\r\nHost: allowed.test:%[1]d\r\nConnection: close\r\n\r\n", tg.port))
	mustWaitFor(t, 10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 })
	e.srv.Shutdown(t.Context())
	lines := strings.Split(strings.TrimSpace(readFile(t, e.audit)), "\n")
	if len(lines) != 4 { // the target's opening is on record once
		t.Fatalf("%d audit lines, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	events := map[string]int{}
	for _, l := range lines {
		var en audit.Entry
		if err := json.Unmarshal([]byte(l), &en); err != nil {
			t.Fatalf("not an audit.Entry: %v: %s", err, l)
		}
		if en.Actor != "proxy" || en.Time.IsZero() || en.Subject == "" {
			t.Fatalf("entry %+v", en)
		}
		for _, k := range []string{"client", "method", "ip", "rule", "bytes_up", "bytes_down", "duration_ms"} {
			if _, ok := en.Detail[k]; !ok {
				t.Fatalf("detail lacks %s: %s", k, l)
			}
		}
		events[en.Event+"/"+en.Outcome]++
		if en.Event == "egress.allow" && en.Detail["bytes_down"].(float64) == 0 {
			t.Fatalf("allowed line without bytes: %s", l)
		}
	}
	if events["egress.allow/allowed"] != 2 || events["egress.deny/denied"] != 1 || events["egress.open/allowed"] != 1 {
		t.Fatalf("events %v", events)
	}
}

// TestAuditRetry: lines the writer cannot write (here: its lock file cannot
// be opened) are kept and tried again; once the file can be written they
// all arrive, each once, and the proxy said what happened.
func TestAuditRetry(t *testing.T) {
	old := auditRetry
	auditRetry = 50 * time.Millisecond
	t.Cleanup(func() { auditRetry = old })
	tg := newTarget(t, "127.0.0.1")
	var mu sync.Mutex
	var said []string
	e := startProxy(t, basePolicy(tg.port), func(o *Options) {
		o.Logf = func(f string, a ...any) { mu.Lock(); said = append(said, fmt.Sprintf(f, a...)); mu.Unlock() }
	})
	block := e.audit + ".lock"
	if err := os.Mkdir(block, 0o700); err != nil { // opening it for writing fails, even as root
		t.Fatal(err)
	}
	for range 3 {
		e.tunnel(t, fmt.Sprintf("allowed.test:%d", tg.port), "")
	}
	e.tunnel(t, fmt.Sprintf("denied.test:%d", tg.port), "")
	// The writer has failed once it says so (on a busy machine that can
	// take longer than any fixed pause); then a few more tries fail.
	saidSo := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(said, "\n"), s)
	}
	if !waitFor(10*time.Second, func() bool { return saidSo("keeping the lines") }) {
		t.Fatal("the writer never said it could not write the audit file")
	}
	time.Sleep(3 * auditRetry) // several tries, all failing
	if b, _ := os.ReadFile(e.audit); len(b) > 0 {
		t.Fatalf("audit file written while its lock could not be taken: %s", b)
	}
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	count := func() int { b, _ := os.ReadFile(e.audit); return strings.Count(string(b), "\n") }
	if !waitFor(10*time.Second, func() bool { return count() >= 4 }) {
		t.Fatalf("%d audit lines after the lock came back, want 4", count())
	}
	e.srv.Shutdown(t.Context())
	if n := count(); n != 4 {
		t.Fatalf("%d audit lines, want 4 (each once):\n%s", n, readFile(t, e.audit))
	}
	mu.Lock()
	all := strings.Join(said, "\n")
	mu.Unlock()
	if !strings.Contains(all, "keeping the lines") || !strings.Contains(all, "writing "+e.audit+" again") {
		t.Fatalf("the proxy said:\n%s", all)
	}
}

// TestAuditRedacts: a secret-shaped string in what a client sends reaches
// the proxy's audit log only redacted.
func TestAuditRedacts(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	e.tunnel(t, fmt.Sprintf("%s.denied.test:%d", secret, tg.port), "")
	mustWaitFor(t, 10*time.Second, func() bool { return e.srv.ActiveTunnels() == 0 })
	e.srv.Shutdown(t.Context())
	log := readFile(t, e.audit)
	if strings.Contains(log, secret) || !strings.Contains(log, "[REDACTED:github-token]") {
		t.Fatalf("audit log:\n%s", log)
	}
}
