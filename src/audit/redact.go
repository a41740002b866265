package audit

import (
	"regexp"
	"strings"
)

// secretPatterns are the token shapes Redact removes. Each names its kind so
// a reader of the log knows what was there. Patterns never match a double
// quote, so redacting a JSON line keeps it valid JSON.
//
// Each pattern has a cheap trigger: a literal every match must contain
// (case-folded for the case-insensitive ones). Redact runs a pattern's
// regexp only when its trigger is present, so ordinary lines — the proxy
// writes thousands per second — cost a few substring scans, not ten regexp
// scans. TestRedactTriggers and FuzzRedactTriggers check that a trigger
// never hides a match.
var secretPatterns = []struct {
	kind    string
	re      *regexp.Regexp
	trigger []string // the regexp can match only if s contains one of these
	fold    bool     // compare triggers case-insensitively
}{
	// PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, …), with raw or
	// JSON-escaped newlines; an unterminated block is cut to its end.
	{"private-key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[^"]*)`), []string{"-----BEGIN "}, false},
	{"age-secret-key", regexp.MustCompile(`AGE-SECRET-KEY-(?:PQ-)?1[0-9A-Za-z]+`), []string{"AGE-SECRET-KEY-"}, false},
	{"github-token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, false},
	{"anthropic-key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{8,}`), []string{"sk-ant-"}, false},
	{"openai-key", regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}`), []string{"sk-"}, false},
	{"aws-key-id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), []string{"AKIA", "ASIA"}, false},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`), []string{"xox"}, false},
	{"bearer", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*`), []string{"bearer"}, true},
	{"basic-auth", regexp.MustCompile(`(?i)\bbasic\s+[A-Za-z0-9+/]{8,}=*`), []string{"basic"}, true},
	{"url-password", regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@"]+):[^/\s@"]+@`), []string{"://"}, false},
}

// Redact replaces every secret-shaped substring of s with
// "[REDACTED:<kind>]". It is the one redaction function for every log Hobbs
// writes.
func Redact(s string) string {
	for _, p := range secretPatterns {
		if !triggered(s, p.trigger, p.fold) {
			continue
		}
		if p.kind == "url-password" {
			s = p.re.ReplaceAllString(s, "${1}:[REDACTED:url-password]@")
			continue
		}
		s = p.re.ReplaceAllLiteralString(s, "[REDACTED:"+p.kind+"]")
	}
	return s
}

func triggered(s string, lits []string, fold bool) bool {
	for _, l := range lits {
		if fold {
			if containsFold(s, l) {
				return true
			}
		} else if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word lit in
// any letter case, without allocating. Any non-ASCII byte counts as a hit:
// (?i) also folds Unicode look-alikes (U+017F "ſ" matches "s").
func containsFold(s, lit string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	first := lit[0]
	for i := 0; i+len(lit) <= len(s); i++ {
		if s[i]|0x20 != first {
			continue
		}
		j := 1
		for ; j < len(lit); j++ {
			if s[i+j]|0x20 != lit[j] {
				break
			}
		}
		if j == len(lit) {
			return true
		}
	}
	return false
}
