package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"services: [github, claude]\ndomains:\n  - example.com\n  - \"*.example.org:8443\"\ndeny: [bad.example.org]\nallow_private: [127.0.0.0/8, \"::1/128\"]\n",
		"domains: [\"[::1]:80\", 10.0.0.1]\n", "bogus: 1", "- a", "domains: {a: b}", "domains: [\"*.com\"]", "",
		"domains: [evil.com:443.allowed.com]", "domains: [&a x, *a]", "domains: !!binary aGVsbG8=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		timer := time.AfterFunc(3*time.Second, func() { panic(fmt.Sprintf("SLOW INPUT %q", src)) })
		defer timer.Stop()
		p, err := Parse("f.yaml", []byte(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		// Every accepted rule re-parses to itself (the canonical form is a
		// fixed point), and no wildcard covers a public suffix.
		for _, r := range append(append([]*Rule{}, p.Domains...), p.Deny...) {
			r2, err := ParseRule(r.Pattern)
			if err != nil || r2.Pattern != r.Pattern {
				t.Fatalf("rule %q does not round-trip: %v %v", r.Pattern, r2, err)
			}
			if r.Pattern == "*" || strings.HasPrefix(r.Pattern, "*.") && !strings.Contains(r.Host, ".") {
				t.Fatalf("over-broad wildcard accepted: %q", r.Pattern)
			}
		}
		p.Decide("example.com", 443, true)
		if _, err := p.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"example.com", "EXAMPLE.com.", "127.1", "0x7f.0.0.1", "2130706433", "[::ffff:127.0.0.1]",
		"fe80::1%eth0", "bücher.example", "a_b.example", "ab--cd.example", "-a.example", "localhost", "ＥＸＡＭＰＬＥ.com", "xn--bcher-kva.example", "a..b", "1.2.3.256", "0", "[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := NormalizeHost(s)
		if err != nil {
			return
		}
		c := h.String()
		// The canonical form is a fixed point and has no character that could
		// change meaning in an authority or a log line.
		h2, err := NormalizeHost(c)
		if err != nil || h2 != h {
			t.Fatalf("NormalizeHost(%q) = %q, which normalises to %v, %v", s, c, h2, err)
		}
		if h.IsIP() == (h.Name != "") {
			t.Fatalf("%q: both or neither of name and IP", s)
		}
		if strings.ContainsAny(c, "/@?#%\\ \t\r\n\x00\"") || c != strings.ToLower(c) || strings.HasSuffix(c, ".") {
			t.Fatalf("NormalizeHost(%q) = %q is not canonical", s, c)
		}
		if !h.IsIP() {
			if _, ok, err := parseLooseIPv4(c); ok || err != nil {
				t.Fatalf("name %q looks like an IPv4 address", c)
			}
		}
	})
}
