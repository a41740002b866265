package audit

import "regexp"

// secretPatterns are the token shapes Redact removes. Each names its kind so
// a reader of the log knows what was there. Patterns never match a double
// quote, so redacting a JSON line keeps it valid JSON.
var secretPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	// PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, …), with raw or
	// JSON-escaped newlines; an unterminated block is cut to its end.
	{"private-key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[^"]*)`)},
	{"age-secret-key", regexp.MustCompile(`AGE-SECRET-KEY-(?:PQ-)?1[0-9A-Za-z]+`)},
	{"github-token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	{"anthropic-key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{8,}`)},
	{"openai-key", regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}`)},
	{"aws-key-id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`)},
	{"bearer", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*`)},
	{"basic-auth", regexp.MustCompile(`(?i)\bbasic\s+[A-Za-z0-9+/]{8,}=*`)},
	{"url-password", regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@"]+):[^/\s@"]+@`)},
}

// Redact replaces every secret-shaped substring of s with
// "[REDACTED:<kind>]". It is the one redaction function for every log Hobbs
// writes.
func Redact(s string) string {
	for _, p := range secretPatterns {
		if p.kind == "url-password" {
			s = p.re.ReplaceAllString(s, "${1}:[REDACTED:url-password]@")
			continue
		}
		s = p.re.ReplaceAllLiteralString(s, "[REDACTED:"+p.kind+"]")
	}
	return s
}
