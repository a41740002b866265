package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

func TestRedactEachPattern(t *testing.T) {
	cases := []struct{ name, in, secret string }{
		{"github classic", "token ghp_" + strings.Repeat("a1B2", 9) + " end", "ghp_"},
		{"github oauth", "gho_" + strings.Repeat("Z", 36), "gho_"},
		{"github fine-grained", "github_pat_11ABCDEFG0_" + strings.Repeat("x", 40), "github_pat_"},
		{"anthropic", "key=sk-ant-api03-" + strings.Repeat("Q", 40), "sk-ant-"},
		{"openai", "sk-proj-" + strings.Repeat("k", 40), "sk-proj-"},
		{"aws", "AKIAIOSFODNN7EXAMPLE is the id", "AKIAIOSFODNN7EXAMPLE"},
		{"slack", "xoxb-123456789012-abcdefghij", "xoxb-"},
		{"bearer", "Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig-_x", "eyJhbGciOi"},
		{"basic", "Proxy-Authorization: Basic aG9iYnM6c2VjcmV0dG9rZW4=", "aG9iYnM6"},
		{"age", "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ", "AGE-SECRET-KEY-1"},
		{"url password", "proxy http://hobbs:s3cr3t-token@proxy:3128", "s3cr3t-token"},
		{"pem", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAA"},
		{"pem unterminated", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", "MIIEpAIBAAKCAQEA"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Redact(c.in)
			if strings.Contains(out, c.secret) {
				t.Fatalf("secret survived: %q", out)
			}
			if !strings.Contains(out, "[REDACTED:") {
				t.Fatalf("no redaction marker: %q", out)
			}
		})
	}
}

func TestRedactLeavesOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"memory.add mem_20260101_001", "https://github.com/user/repo", "basic idea", "ask-anything",
		"github.com:443 allowed by services.github",
	} {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q", s, got)
		}
	}
}

func TestLogRedactsAndStaysJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.log")
	l := &Logger{Path: p, Actor: "host:test", Now: func() time.Time { return time.Unix(0, 0) }}
	pem := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----"
	err := l.Log(Entry{Event: "vault.set", Subject: "ghp_" + strings.Repeat("x", 36),
		Detail: map[string]any{"note": pem, "n": 3}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "MHcCAQEEIB") || strings.Contains(string(b), "ghp_xxxx") {
		t.Fatalf("secret on disk: %s", b)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not JSON after redaction: %v: %s", err, b)
	}
	if e.Actor != "host:test" || e.Outcome != "ok" || e.Event != "vault.set" {
		t.Fatalf("entry %+v", e)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestConcurrentLogLinesIntact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.log")
	l := New(safefile.Beneath(filepath.Dir(p)), p)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Log(Entry{Event: "x", Subject: strings.Repeat("s", 3000)})
		}()
	}
	wg.Wait()
	f, _ := os.Open(p)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		n++
	}
	if n != 40 {
		t.Fatalf("%d lines", n)
	}
}

func TestRecordOutcomeAndError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.log")
	l := &Logger{Path: p, Actor: "host:test"}
	l.Record(Entry{Event: "x.ok", Subject: "a", Detail: map[string]any{"k": "v"}}, nil)
	detail := map[string]any{"k": "v"}
	l.Record(Entry{Event: "x.fail", Subject: "b", Detail: detail}, errors.New("first line\nsecond line"))
	l.Record(Entry{Event: "x.dup", Outcome: "duplicate"}, nil)
	if len(detail) != 1 {
		t.Fatalf("Record changed the caller's detail: %v", detail)
	}
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), b)
	}
	var ok, fail, dup Entry
	for i, e := range []*Entry{&ok, &fail, &dup} {
		if err := json.Unmarshal([]byte(lines[i]), e); err != nil {
			t.Fatal(err)
		}
	}
	if ok.Outcome != "ok" || ok.Detail["k"] != "v" || ok.Detail["error"] != nil {
		t.Errorf("ok entry %+v", ok)
	}
	if fail.Outcome != "error" || fail.Detail["error"] != "first line" || fail.Detail["k"] != "v" {
		t.Errorf("error entry %+v", fail)
	}
	if dup.Outcome != "duplicate" {
		t.Errorf("outcome not kept: %+v", dup)
	}
}

func TestRecordReportsWriteFailure(t *testing.T) {
	var got error
	l := &Logger{Path: filepath.Join(t.TempDir(), "missing", "audit.log"), Failed: func(err error) { got = err }}
	l.Record(Entry{Event: "x"}, nil)
	if got == nil {
		t.Fatal("a line that could not be written was not reported")
	}
	var nilLogger *Logger
	nilLogger.Record(Entry{Event: "x"}, nil) // records nothing, does not panic
}
