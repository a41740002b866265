package audit

import (
	"strings"
	"testing"
)

// slowRedact is Redact without the trigger shortcut: every regexp runs.
func slowRedact(s string) string {
	for _, p := range secretPatterns {
		if p.kind == "url-password" {
			s = p.re.ReplaceAllString(s, "${1}:[REDACTED:url-password]@")
			continue
		}
		s = p.re.ReplaceAllLiteralString(s, "[REDACTED:"+p.kind+"]")
	}
	return s
}

var triggerSeeds = []string{
	"token ghp_" + strings.Repeat("a1B2", 9), "github_pat_11ABCDEFG0_" + strings.Repeat("x", 40),
	"sk-ant-api03-" + strings.Repeat("Q", 40), "sk-proj-" + strings.Repeat("k", 40), "AKIAIOSFODNN7EXAMPLE",
	"ASIAIOSFODNN7EXAMPLE", "Proxy-Authorization: ba\u017fic aG9iYnM6c2VjcmV0dG9rZW4=", "xoxb-123456789012-abcdefghij", "Authorization: BeArEr eyJhbGciOi.eyJzdWIi.sig",
	"Proxy-Authorization: bAsIc aG9iYnM6c2VjcmV0dG9rZW4=", "proxy HTTP://hobbs:s3cr3t@proxy:3128",
	"-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA", "AGE-SECRET-KEY-1QQQQ",
	`{"event":"egress.allow","subject":"github.com:443","detail":{"rule":"services.github github.com"}}`,
}

func TestRedactTriggers(t *testing.T) {
	for _, s := range triggerSeeds {
		if got, want := Redact(s), slowRedact(s); got != want {
			t.Errorf("Redact(%q) = %q, regexps alone give %q", s, got, want)
		}
		checkRedactBytes(t, s)
	}
}

// checkRedactBytes: RedactBytes says what Redact says, and nil only when
// nothing was redacted.
func checkRedactBytes(t *testing.T, s string) {
	t.Helper()
	want := Redact(s)
	got := RedactBytes([]byte(s))
	if got == nil {
		if want != s {
			t.Fatalf("RedactBytes(%q) = nil, Redact gives %q", s, want)
		}
	} else if string(got) != want {
		t.Fatalf("RedactBytes(%q) = %q, Redact gives %q", s, got, want)
	}
}

func TestRedactBytesSkipsPlainLines(t *testing.T) {
	line := []byte(`{"time":"2026-11-23T16:30:59.028404223Z","actor":"proxy","event":"egress.allow","subject":"localhost:19000","outcome":"allowed","detail":{"client":"127.0.0.1:54321","method":"CONNECT","ip":"127.0.0.1","rule":"domain localhost:19000","bytes_up":8,"bytes_down":64,"duration_ms":2}}`)
	if got := RedactBytes(line); got != nil {
		t.Fatalf("RedactBytes of a line with no trigger = %q, want nil (no copy)", got)
	}
	if n := testing.AllocsPerRun(100, func() { RedactBytes(line) }); n != 0 {
		t.Fatalf("RedactBytes of a plain line: %v allocations, want 0", n)
	}
}

func FuzzRedactTriggers(f *testing.F) {
	for _, s := range triggerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Redact(s), slowRedact(s); got != want {
			t.Fatalf("Redact(%q) = %q, regexps alone give %q", s, got, want)
		}
		checkRedactBytes(t, s)
	})
}
