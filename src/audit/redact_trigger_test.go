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
	})
}
