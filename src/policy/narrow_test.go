package policy

import (
	"strings"
	"testing"
	"time"
)

// A narrowed policy, parsed back, allows only its domains and Claude's
// service, and keeps the deny entries, private ranges and request rules of
// the policy it came from.
func TestNarrowRoundTrip(t *testing.T) {
	wide, err := Parse("wide.yaml", []byte(`services: [github]
domains: ["api.bank.example", "*.files.example:8443", "wide.example"]
deny: ["gist.github.com"]
allow_private: ["10.1.2.0/24"]
rules:
  api.bank.example: ["allow GET /v1/", "deny *"]
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wide.Narrow("the policy of a test run", []string{"api.bank.example", "*.files.example:8443"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# the policy of a test run\n") {
		t.Errorf("header: %q", b)
	}
	n, err := Parse("narrow.yaml", b)
	if err != nil {
		t.Fatalf("the narrowed policy does not parse: %v\n%s", err, b)
	}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"api.bank.example", 443, true},
		{"a.files.example", 8443, true},
		{"a.files.example", 443, false},
		{"wide.example", 443, false},   // the wide policy's, not the run's
		{"api.github.com", 443, false}, // a service the run did not name
		{"api.anthropic.com", 443, true},
	} {
		if got := n.Decide(c.host, c.port, true).Allow; got != c.want {
			t.Errorf("%s:%d allowed=%v, want %v", c.host, c.port, got, c.want)
		}
	}
	if len(n.Deny) != 1 || n.Deny[0].Pattern != "gist.github.com" {
		t.Errorf("deny: %v", n.Deny)
	}
	if len(n.AllowPrivate) != 1 || n.AllowPrivate[0].String() != "10.1.2.0/24" {
		t.Errorf("allow_private: %v", n.AllowPrivate)
	}
	hr := n.requestRules("api.bank.example", 443, true)
	if hr == nil || len(hr.Requests) != 2 || hr.Check("POST", "/v1/x").Allow {
		t.Errorf("request rules not kept: %+v", hr)
	}
}

// A run with no hosts gets Claude's service only.
func TestNarrowNoHosts(t *testing.T) {
	wide, err := Parse("wide.yaml", []byte("domains: [\"wide.example\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wide.Narrow("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Parse("narrow.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if n.Decide("wide.example", 443, true).Allow || len(n.Domains) != 0 {
		t.Errorf("a run with no hosts allows %v", n.Domains)
	}
}

func TestDeniedSince(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	log := strings.Join([]string{
		`{"time":"2026-11-26T11:00:00Z","event":"egress.deny","subject":"old.example:443","detail":{"rule":"default-deny"}}`,
		`{"time":"2026-11-26T12:00:01Z","event":"egress.deny","subject":"b.example:443","detail":{"rule":"default-deny"}}`,
		`not json`,
		`{"time":"2026-11-26T12:00:02Z","event":"egress.deny","subject":"gist.github.com:443","detail":{"rule":"gist.github.com"}}`,
		`{"time":"2026-11-26T12:00:03Z","event":"egress.allow","subject":"ok.example:443","detail":{"rule":"ok.example"}}`,
		`{"time":"2026-11-26T12:00:04Z","event":"egress.deny","subject":"a.example:8080","detail":{"rule":"default-deny"}}`,
		`{"time":"2026-11-26T12:00:05Z","event":"egress.deny","subject":"b.example:443","detail":{"rule":"default-deny"}}`,
	}, "\n")
	got := DeniedSince(strings.NewReader(log), start)
	if len(got) != 2 || got[0] != (Denied{"a.example:8080", "a.example", 8080}) || got[1] != (Denied{"b.example:443", "b.example", 443}) {
		t.Errorf("DeniedSince = %+v", got)
	}
}
