package policy

import (
	"net/netip"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestParseErrorsCarryLine(t *testing.T) {
	cases := []struct{ src, want string }{
		{"domains: [ok.com]\nbogus: 1\n", "p.yaml:2: unknown key \"bogus\""},
		{"domains:\n  - ok.com\n  - \"*\"\n", "p.yaml:3:"},
		{"domains:\n  - \"*.com\"\n", "p.yaml:2:"},
		{"domains:\n  - \"*.co.uk\"\n", "p.yaml:2:"},
		{"domains:\n  - evil.com:443.allowed.com\n", "p.yaml:2:"},
		{"domains:\n  - a.*.com\n", "p.yaml:2:"},
		{"domains:\n  - \"*example.com\"\n", "p.yaml:2:"},
		{"domains:\n  - https://example.com\n", "p.yaml:2:"},
		{"domains:\n  - example.com/path\n", "p.yaml:2:"},
		{"domains:\n  - example.com:0\n", "p.yaml:2:"},
		{"domains:\n  - example.com:65536\n", "p.yaml:2:"},
		{"domains:\n  - \"\"\n", "p.yaml:2:"},
		{"domains:\n  - \"*.127.0.0.1\"\n", "p.yaml:2:"},
		{"services: [nosuch]\n", "p.yaml:1: unknown service \"nosuch\""},
		{"allow_private: [10.0.0.0/33]\n", "p.yaml:1:"},
		{"allow_private: [example.com]\n", "p.yaml:1:"},
		{"deny:\n  - \"*\"\n", "p.yaml:2:"},
		{"domains: example.com\n", "p.yaml:1: domains must be a list"},
		{"- a\n- b\n", "p.yaml:1: a policy is a mapping"},
		{"domains: [a.com\n", "p.yaml:"},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want error containing %q", c.src, err, c.want)
		}
	}
}

func TestParseAcceptsEmptyAndNull(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "services: []\ndomains: []\ndeny: []\nallow_private: []\n", "domains:\n"} {
		if _, err := Parse("p.yaml", []byte(src)); err != nil {
			t.Errorf("Parse(%q): %v", src, err)
		}
	}
}

func TestDecide(t *testing.T) {
	p := mustParse(t, `
services: [github]
domains:
  - example.com
  - "*.example.org"
  - localhost:8080
  - api.example.net:8443
  - 10.1.2.3:9000
  - bücher.example
deny:
  - evil.example.org
  - "*.bad.example.org"
  - example.com:80
`)
	cases := []struct {
		host    string
		port    int
		connect bool
		allow   bool
	}{
		{"example.com", 443, true, true},
		{"example.com", 443, false, true},
		{"example.com", 80, false, false}, // deny example.com:80 wins
		{"example.com", 80, true, false},  // CONNECT without port entry: 443 only
		{"example.com", 8443, true, false},
		{"www.example.com", 443, true, false},
		{"example.org", 443, true, false}, // apex not covered by *.example.org
		{"a.example.org", 443, true, true},
		{"a.b.example.org", 80, false, true},
		{"evil.example.org", 443, true, false},
		{"x.bad.example.org", 443, true, false},
		{"bad.example.org", 443, true, true}, // deny wildcard does not cover its apex either
		{"localhost", 8080, true, true},
		{"localhost", 8080, false, true},
		{"localhost", 443, true, false},
		{"api.example.net", 8443, true, true},
		{"api.example.net", 443, true, false},
		{"10.1.2.3", 9000, true, true},
		{"github.com", 443, true, true},
		{"api.github.com", 443, true, true},
		{"github.com.evil.com", 443, true, false},
		{"evilgithub.com", 443, true, false},
		{"xn--bcher-kva.example", 443, true, true},
	}
	for _, c := range cases {
		d := p.Decide(c.host, c.port, c.connect)
		if d.Allow != c.allow {
			t.Errorf("Decide(%s, %d, connect=%v) = %v by %q, want %v", c.host, c.port, c.connect, d.Allow, d.Rule, c.allow)
		}
		if d.Rule == "" {
			t.Errorf("Decide(%s, %d): no rule named", c.host, c.port)
		}
	}
}

func TestMergeDenyFromLaterFileWins(t *testing.T) {
	a := mustParse(t, "services: [github]\n")
	b := mustParse(t, "deny: [gist.github.com]\ndomains: [extra.example]\n")
	m := Merge(a, b)
	if d := m.Decide("gist.github.com", 443, true); d.Allow {
		t.Fatalf("deny in the instance file did not win: %+v", d)
	}
	if d := m.Decide("github.com", 443, true); !d.Allow || !strings.Contains(d.Rule, "github") {
		t.Fatalf("github.com: %+v", d)
	}
	if d := m.Decide("extra.example", 443, true); !d.Allow {
		t.Fatalf("extra.example: %+v", d)
	}
}

func TestCheckTarget(t *testing.T) {
	p := mustParse(t, "domains: [example.com, \"localhost:8080\"]\nallow_private: [127.0.0.0/8]\n")
	cases := []struct {
		target string
		allow  bool
	}{
		{"https://example.com/v1/x?y=1", true},
		{"http://example.com/", true},
		{"example.com", true},
		{"EXAMPLE.COM.", true},
		{"example.com:443", true},
		{"example.com:22", false},
		{"http://localhost:8080/", true},
		{"localhost:8080", true},
		{"LOCALHOST.:8080", true},
		{"http://127.0.0.1:8080/", false},
		{"https://other.com", false},
	}
	for _, c := range cases {
		d, err := p.Check(c.target)
		if err != nil {
			t.Errorf("Check(%q): %v", c.target, err)
			continue
		}
		if d.Allow != c.allow {
			t.Errorf("Check(%q) = %v by %s, want %v", c.target, d.Allow, d.Rule, c.allow)
		}
	}
	if _, err := p.Check("ftp://example.com"); err == nil {
		t.Errorf("ftp scheme accepted")
	}
}

func TestNormalizeHost(t *testing.T) {
	cases := map[string]string{
		"Example.COM.":          "example.com",
		"127.1":                 "127.0.0.1",
		"2130706433":            "127.0.0.1",
		"0x7f.0.0.1":            "127.0.0.1",
		"0x7F000001":            "127.0.0.1",
		"0177.0.0.1":            "127.0.0.1",
		"127.000.000.001":       "127.0.0.1",
		"[::ffff:127.0.0.1]":    "127.0.0.1",
		"::ffff:7f00:1":         "127.0.0.1",
		"[::1]":                 "::1",
		"[fe80::1%25eth0]":      "fe80::1",
		"fe80::1%eth0":          "fe80::1",
		"bücher.example":        "xn--bcher-kva.example",
		"ＥＸＡＭＰＬＥ.com":           "example.com",
		"0":                     "0.0.0.0",
		"10.0.0.1.":             "10.0.0.1",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
	}
	for in, want := range cases {
		h, err := NormalizeHost(in)
		if err != nil {
			t.Errorf("NormalizeHost(%q): %v", in, err)
			continue
		}
		if h.String() != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, h.String(), want)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "example.com..", "-a.com", "a b.com", "a%2e.com", "a\x00.com",
		"1.2.3.256", "0x1.0x100.0.0.0", "256.1", "a/b", "a:b", "[::1", "exa_mple.com:1", strings.Repeat("a", 64) + ".com",
		"4294967296", "1.2.3.4.5"} {
		if h, err := NormalizeHost(bad); err == nil {
			t.Errorf("NormalizeHost(%q) = %q, want error", bad, h.String())
		}
	}
}

func TestGuard(t *testing.T) {
	p := mustParse(t, "allow_private: [10.1.0.0/16]\n")
	refused := []string{"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "ff02::1", "::ffff:10.0.0.1",
		"64:ff9b::a00:1", "2002:a00:1::1", "198.18.0.1", "240.0.0.1", "192.0.0.8", "fd00:ec2::254"}
	for _, a := range refused {
		if ok, _ := p.AddrAllowed(mustAddr(a)); ok {
			t.Errorf("AddrAllowed(%s) = true", a)
		}
	}
	for _, a := range []string{"10.1.2.3", "93.184.216.34", "2606:2800:220:1::1", "1.1.1.1"} {
		if ok, why := p.AddrAllowed(mustAddr(a)); !ok {
			t.Errorf("AddrAllowed(%s) = false (%s)", a, why)
		}
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestWildcardOverNameEndingInDigit: a name whose last label ends in a digit
// is still a name (only an all-numeric last label is an address).
func TestWildcardOverNameEndingInDigit(t *testing.T) {
	p := mustParse(t, "domains: [\"*.corp.x1\"]\ndeny: [\"*.bad.corp.x1\"]\n")
	if d := p.Decide("a.corp.x1", 443, true); !d.Allow {
		t.Errorf("a.corp.x1: %+v", d)
	}
	if d := p.Decide("a.bad.corp.x1", 443, true); d.Allow {
		t.Errorf("a.bad.corp.x1 allowed: %+v", d)
	}
}

// TestAllowPrivateMappedForm: a range written in IPv4-mapped IPv6 form opens
// the IPv4 range it means (the guard unmaps addresses before checking), and
// nothing more.
func TestAllowPrivateMappedForm(t *testing.T) {
	p := mustParse(t, "allow_private: [\"::ffff:10.1.0.0/112\"]\n")
	for _, a := range []string{"10.1.2.3", "::ffff:10.1.2.3"} {
		if ok, why := p.AddrAllowed(mustAddr(a)); !ok {
			t.Errorf("AddrAllowed(%s) = false (%s)", a, why)
		}
	}
	for _, a := range []string{"10.2.0.1", "127.0.0.1", "::ffff:10.2.0.1"} {
		if ok, _ := p.AddrAllowed(mustAddr(a)); ok {
			t.Errorf("AddrAllowed(%s) = true", a)
		}
	}
}
