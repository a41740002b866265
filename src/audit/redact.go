package audit

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strings"
)

// secretPatterns are the token shapes Redact removes. Each names its kind so
// a reader of the log knows what was there. Patterns never match a double
// quote, so redacting a JSON line keeps it valid JSON.
//
// Each pattern has a cheap trigger: a literal every match must contain
// (case-folded for the case-insensitive ones). Redact finds the triggers
// present in one pass over the line and runs only their patterns' regexps,
// so ordinary lines — the proxy writes thousands per second — cost one scan,
// not ten regexp scans. TestRedactTriggers and FuzzRedactTriggers check that
// a trigger never hides a match.
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
	return redactMasked(s, triggerMask(s))
}

// RedactBytes is Redact for a line being built in a buffer: it returns nil
// when b holds nothing secret-shaped (the common case: no copy, no
// allocation), else the redacted text.
func RedactBytes(b []byte) []byte {
	m := triggerMask(b)
	if m == 0 {
		return nil
	}
	return []byte(redactMasked(string(b), m))
}

// SecretKind returns the kind of the first secret-shaped substring of s
// ("github-token", "private-key", …), or "" when there is none. It lets a
// caller refuse to store such text rather than only keep it out of logs.
//
// It finds what Redact replaces, except for the two patterns whose keyword
// is an English word: Redact hides "bearer X" and "basic X" whatever X is (a
// log loses a word at worst), while SecretKind counts them only when X looks
// like a credential, so that prose such as "basic formatting" or "the bearer
// of the letter" is not taken for one.
func SecretKind(s string) string {
	m := triggerMask(s)
	if m == 0 {
		return ""
	}
	for i, p := range secretPatterns {
		if m&(1<<i) == 0 {
			continue
		}
		switch p.kind {
		case "bearer", "basic-auth":
			for _, match := range p.re.FindAllString(s, -1) {
				if credentialShaped(p.kind, match) {
					return p.kind
				}
			}
		default:
			if p.re.MatchString(s) {
				return p.kind
			}
		}
	}
	return ""
}

// credentialShaped reports whether a "bearer X" or "basic X" match carries
// a credential: for basic, X decodes from base64 to "user:password"; for a
// bearer token, X is 16 characters or more and holds a digit or punctuation
// (a JWT, an opaque token), or is 32 or more.
func credentialShaped(kind, match string) bool {
	f := strings.Fields(match)
	if len(f) < 2 {
		return false
	}
	cred := f[len(f)-1]
	if kind == "basic-auth" {
		b, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(cred, "="))
		}
		return err == nil && bytes.IndexByte(b, ':') > 0
	}
	if len(cred) >= 32 {
		return true
	}
	return len(cred) >= 16 && strings.ContainsFunc(cred, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

func redactMasked(s string, m uint32) string {
	for i, p := range secretPatterns {
		if m&(1<<i) == 0 {
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

// A trigger literal, filed under its first byte (both cases of it for a
// case-folded pattern) so that one pass over a line finds every pattern
// whose regexp may match.
type trigger struct {
	lit   string
	fold  bool
	fold2 byte // 0x20 when the second byte is compared case-insensitively
	bit   uint32
}

var (
	triggersByFirst [256][]trigger
	isFirst         [256]bool // some trigger starts with this byte (non-ASCII: all fold ones)
	foldBits        uint32    // patterns compared case-insensitively
)

func init() {
	if len(secretPatterns) > 32 {
		panic("audit: more secret patterns than mask bits")
	}
	for c := 0x80; c < 0x100; c++ {
		isFirst[c] = true
	}
	for i, p := range secretPatterns {
		bit := uint32(1) << i
		if p.fold {
			foldBits |= bit
		}
		for _, lit := range p.trigger {
			if len(lit) < 2 {
				panic("audit: a trigger shorter than two bytes")
			}
			t := trigger{lit: lit, fold: p.fold, bit: bit}
			if p.fold {
				t.fold2 = 0x20
			}
			c := lit[0]
			triggersByFirst[c] = append(triggersByFirst[c], t)
			isFirst[c] = true
			if p.fold && c|0x20 >= 'a' && c|0x20 <= 'z' {
				triggersByFirst[c^0x20] = append(triggersByFirst[c^0x20], t)
				isFirst[c^0x20] = true
			}
		}
	}
}

// triggerMask has bit i set when s contains a trigger of secretPatterns[i].
// Any non-ASCII byte triggers the case-folded patterns: (?i) also folds
// Unicode look-alikes (U+017F "ſ" matches "s").
func triggerMask[T string | []byte](s T) uint32 {
	var m uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isFirst[c] {
			continue
		}
		if c >= 0x80 {
			m |= foldBits
			continue
		}
		for _, t := range triggersByFirst[c] {
			if m&t.bit != 0 || i+1 >= len(s) || s[i+1]|t.fold2 != t.lit[1] {
				continue // every trigger is two bytes or more
			}
			if hasPrefixAt(s, i, t.lit, t.fold) {
				m |= t.bit
			}
		}
	}
	return m
}

// hasPrefixAt reports whether s[i:] starts with lit, compared as lower-case
// ASCII when fold is set (lit is lower-case then).
func hasPrefixAt[T string | []byte](s T, i int, lit string, fold bool) bool {
	if len(s)-i < len(lit) {
		return false
	}
	for j := 0; j < len(lit); j++ {
		c := s[i+j]
		if fold {
			c |= 0x20
		}
		if c != lit[j] {
			return false
		}
	}
	return true
}
