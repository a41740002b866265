package policy

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
)

// TestPlaceholderFormats: placeholders pass the format checks SDKs and
// secret scanners apply to their token family, so the request that
// carries one is sent (and the proxy can find it).
func TestPlaceholderFormats(t *testing.T) {
	// GitHub's published example token: its checksum is the CRC32 of the
	// thirty characters before it, in base62.
	if got := crc62("zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ"); got != "0mLq17" {
		t.Fatalf("crc62 = %q, want 0mLq17", got)
	}
	body := "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0"
	gh := "ghp_" + body + crc62(body)
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	ant := "sk-ant-api03-" + strings.Repeat("Ab3_x-Yz9Q", 9) + "kLm" + "AA"
	cases := []struct {
		name, value string
		check       func(ph string) bool
	}{
		{"github classic", gh, func(ph string) bool {
			return regexp.MustCompile(`^ghp_[A-Za-z0-9]{36}$`).MatchString(ph) && ph[34:] == crc62(ph[4:34])
		}},
		{"github oauth", "gho_" + body + crc62(body), func(ph string) bool {
			return strings.HasPrefix(ph, "gho_") && len(ph) == 40 && ph[34:] == crc62(ph[4:34])
		}},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("aZ9", 19) + "xY", func(ph string) bool {
			return regexp.MustCompile(`^github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}$`).MatchString(ph)
		}},
		{"jwt", jwt, func(ph string) bool {
			p, v := strings.Split(ph, "."), strings.Split(jwt, ".")
			sig, err := base64.RawURLEncoding.DecodeString(p[2])
			return len(p) == 3 && p[0] == v[0] && p[1] == v[1] && len(p[2]) == len(v[2]) && err == nil && len(sig) == 32
		}},
		{"slack bot", "xoxb-2345678901-3456789012345-AbCdEfGhIjKlMnOpQrStUvWx", func(ph string) bool {
			return regexp.MustCompile(`^xoxb-[0-9]{10}-[0-9]{13}-[A-Za-z0-9]{24}$`).MatchString(ph)
		}},
		{"slack refresh", "xoxe.xoxp-1-Mi0yLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MDEyMw", func(ph string) bool {
			return regexp.MustCompile(`^xoxe\.xoxp-[0-9]-[A-Za-z0-9]{38}$`).MatchString(ph)
		}},
		{"aws access key id", "AKIAIOSFODNN7EXAMPLE", func(ph string) bool {
			return regexp.MustCompile(`^AKIA[A-Z2-7]{16}$`).MatchString(ph)
		}},
		{"aws secret access key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", func(ph string) bool {
			return regexp.MustCompile(`^[A-Za-z0-9/+]{40}$`).MatchString(ph) && ph[13] == '/' && ph[21] == '/'
		}},
		{"anthropic", ant, func(ph string) bool {
			return regexp.MustCompile(`^sk-ant-api03-[A-Za-z0-9_-]{93}AA$`).MatchString(ph)
		}},
		{"openai legacy", "sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJuVwXyZ0123456789AbCd", func(ph string) bool {
			return regexp.MustCompile(`^sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}$`).MatchString(ph)
		}},
		{"openai project", "sk-proj-" + strings.Repeat("Ab1-", 20) + "T3BlbkFJ" + strings.Repeat("Zz9_", 10), func(ph string) bool {
			return strings.HasPrefix(ph, "sk-proj-") && strings.Contains(ph, "T3BlbkFJ") && len(ph) == 8+80+8+40
		}},
	}
	for _, tc := range cases {
		ph, err := NewPlaceholder(tc.value)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ph == tc.value || len(ph) != len(tc.value) || !tc.check(tc.value) || !tc.check(ph) {
			t.Errorf("%s: %q → %q: not a token of its family, or the value itself", tc.name, tc.value, ph)
		}
	}
}

func TestPlaceholderShape(t *testing.T) {
	const testValue = "ghp_R3alS3cretValue0123456789abcdefABCD"
	for _, v := range []string{testValue, "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "xoxb-1234567890-ABCDEFGHIJKLmnop", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "sk-ant-oat01-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"} {
		ph, err := NewPlaceholder(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(ph) != len(v) || ph == v {
			t.Fatalf("%q → %q: want the same length, another value", v, ph)
		}
		pre, _ := placeholderPrefix(v)
		want := map[string]string{testValue: "ghp_", "xoxb-1234567890-ABCDEFGHIJKLmnop": "xoxb-",
			"sk-ant-oat01-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789": "sk-ant-oat01-"}[v]
		if want != "" && pre != want {
			t.Fatalf("%q: prefix %q, want %q", v, pre, want)
		}
		if pre == "" || !strings.HasPrefix(ph, pre) {
			t.Fatalf("%q → %q: prefix %q not kept", v, ph, pre)
		}
		shape := func(s string) string {
			return regexp.MustCompile(`[0-9]`).ReplaceAllString(regexp.MustCompile(`[A-Z]`).ReplaceAllString(regexp.MustCompile(`[a-z]`).ReplaceAllString(s, "a"), "A"), "0")
		}
		if shape(ph[len(pre):]) != shape(v[len(pre):]) {
			t.Fatalf("%q → %q: shape differs", v, ph)
		}
	}
	if pre, _ := placeholderPrefix("deadbeef-0123-4567-89ab-cdef01234567"); pre != "" {
		t.Fatalf("prefix of a hex UUID: %q", pre)
	}
	if pre, _ := placeholderPrefix("3f2a9c1e-0123-4567-89ab-cdef01234567"); pre != "" {
		t.Fatalf("prefix of a UUID: %q", pre)
	}
	for _, v := range []string{"short", "pw", "12345678", "pass phrase!"} {
		ph, err := NewPlaceholder(v)
		if err != nil || !strings.HasPrefix(ph, "hobbs_ph_") || len(ph) != 41 {
			t.Fatalf("%q → %q %v: want a generic placeholder", v, ph, err)
		}
	}
	a, _ := NewPlaceholder(testValue)
	b, _ := NewPlaceholder(testValue)
	if a == b {
		t.Fatal("two placeholders of one value are equal")
	}
}
