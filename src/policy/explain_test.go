package policy

import (
	"reflect"
	"strings"
	"testing"
)

func mustBinding(t *testing.T, name string, hosts ...string) Matcher {
	t.Helper()
	m, err := Binding{Name: name, Hosts: hosts}.Compile()
	if err != nil {
		t.Fatalf("Compile(%s, %v): %v", name, hosts, err)
	}
	return m
}

func TestParseTarget(t *testing.T) {
	cases := []struct {
		in   string
		want Target
	}{
		{"api.example.com", Target{"api.example.com", 443, true}},
		{"API.Example.com.:8443", Target{"api.example.com", 8443, true}},
		{"https://api.example.com/v1?x=1", Target{"api.example.com", 443, true}},
		{"HTTPS://api.example.com:8443/", Target{"api.example.com", 8443, true}},
		{"http://api.example.com/", Target{"api.example.com", 80, false}},
		{"http://api.example.com:8080/x", Target{"api.example.com", 8080, false}},
		{"[::1]:8080", Target{"::1", 8080, true}},
		{"::1", Target{"::1", 443, true}},
		{"127.1", Target{"127.0.0.1", 443, true}},
		{"bücher.example", Target{"xn--bcher-kva.example", 443, true}},
	}
	for _, c := range cases {
		got, err := ParseTarget(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "exa mple.com", "example.com:0", "example.com:99999", "http://[::1/"} {
		if got, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestExplain(t *testing.T) {
	p := mustParse(t, `
services: [github]
domains:
  - api.example.com
  - api.example.com:80
  - ruled.example.com
  - "*.wild.example.com"
  - 127.0.0.1:8080
  - 10.1.2.3:8080
deny:
  - gist.github.com
allow_private: [10.0.0.0/8]
rules:
  ruled.example.com:
    - allow GET /repos/
    - deny DELETE
`)
	bindings := []Matcher{
		mustBinding(t, "GITHUB_TOKEN", "api.github.com", "uploads.github.com"),
		mustBinding(t, "API_KEY", "api.example.com"),
		mustBinding(t, "WILD", "*.wild.example.com"),
		mustBinding(t, "ALSO_GITHUB", "api.github.com:443"),
	}
	type want struct {
		allow   bool
		rule    string
		mode    Mode
		secrets []string
		rules   bool
	}
	cases := []struct {
		target string
		want   want
	}{
		// Denied: the rule that decided, nothing else.
		{"evil.example.com", want{rule: "default-deny"}},
		{"gist.github.com", want{rule: "deny gist.github.com"}},
		{"api.example.com:22", want{rule: "default-deny"}},
		{"127.0.0.1:8080", want{rule: "address-guard"}}, // listed, but loopback
		// An opaque tunnel: allowed, no secret, no rules.
		{"github.com", want{allow: true, rule: "services.github github.com", mode: ModeTunnel}},
		{"10.1.2.3:8080", want{allow: true, rule: "domains 10.1.2.3:8080", mode: ModeTunnel}},
		// Intercepted for its secrets, in the order given.
		{"api.github.com", want{allow: true, rule: "services.github api.github.com", mode: ModeIntercepted, secrets: []string{"GITHUB_TOKEN", "ALSO_GITHUB"}}},
		{"https://api.example.com/x", want{allow: true, rule: "domains api.example.com", mode: ModeIntercepted, secrets: []string{"API_KEY"}}},
		{"a.b.wild.example.com", want{allow: true, rule: "domains *.wild.example.com", mode: ModeIntercepted, secrets: []string{"WILD"}}},
		// A bare binding admits 443 through a tunnel and 80 as plain HTTP,
		// never 80 through a tunnel or 443 as plain HTTP.
		{"api.example.com:80", want{allow: true, rule: "domains api.example.com:80", mode: ModeTunnel}},
		{"http://api.example.com/", want{allow: true, rule: "domains api.example.com", mode: ModePlain, secrets: []string{"API_KEY"}}},
		{"http://api.example.com:443/", want{allow: true, rule: "domains api.example.com", mode: ModePlain}},
		// Intercepted for its request rules; plain HTTP is read anyway.
		{"ruled.example.com", want{allow: true, rule: "domains ruled.example.com", mode: ModeIntercepted, rules: true}},
		{"http://ruled.example.com/", want{allow: true, rule: "domains ruled.example.com", mode: ModePlain, rules: true}},
		{"http://github.com/", want{allow: true, rule: "services.github github.com", mode: ModePlain}},
	}
	for _, c := range cases {
		tg, err := ParseTarget(c.target)
		if err != nil {
			t.Fatal(err)
		}
		ex := p.Explain(tg, bindings, true)
		got := want{ex.Allow, ex.Rule, ex.Mode, ex.Secrets, ex.Rules != nil}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Explain(%s) = %+v, want %+v", c.target, got, c.want)
		}
		if ex.Intercepted() != (c.want.mode == ModeIntercepted) {
			t.Errorf("Explain(%s).Intercepted() = %v", c.target, ex.Intercepted())
		}
		if ex.Host != tg.Host || ex.Port != tg.Port {
			t.Errorf("Explain(%s) names %s:%d", c.target, ex.Host, ex.Port)
		}
		// Check is Explain's verdict.
		if d, err := p.Check(c.target); err != nil || d != ex.Decision {
			t.Errorf("Check(%s) = %+v, %v; Explain says %+v", c.target, d, err, ex.Decision)
		}
	}
	// Request rules: which ones, from where.
	ex := p.Explain(Target{"ruled.example.com", 443, true}, nil, true)
	var texts []string
	for _, rr := range ex.Rules.Requests {
		texts = append(texts, rr.Text+" "+rr.Source)
	}
	if got := strings.Join(texts, "; "); got != "allow GET /repos/ p.yaml:15; deny DELETE p.yaml:16" {
		t.Errorf("rules of ruled.example.com: %s", got)
	}
}

// Without a session CA, a tunnel that would be intercepted is refused: its
// rules could not be applied, its secrets not put in. Plain HTTP and opaque
// tunnels are unaffected.
func TestExplainWithoutCA(t *testing.T) {
	p := mustParse(t, "domains: [api.example.com, ruled.example.com, open.example.com]\nrules:\n  ruled.example.com: [\"deny DELETE\"]\n")
	bindings := []Matcher{mustBinding(t, "API_KEY", "api.example.com")}
	for _, c := range []struct {
		target string
		allow  bool
		mode   Mode
		reason string
	}{
		{"ruled.example.com", false, "", "request rules"},
		{"api.example.com", false, "", "secrets are bound"},
		{"open.example.com", true, ModeTunnel, ""},
		{"http://ruled.example.com/", true, ModePlain, ""},
	} {
		tg, _ := ParseTarget(c.target)
		ex := p.Explain(tg, bindings, false)
		if ex.Allow != c.allow || ex.Mode != c.mode || !strings.Contains(ex.Reason, c.reason) {
			t.Errorf("Explain(%s) without a CA = %+v", c.target, ex)
		}
		if !ex.Allow && (ex.Rule != "interception-unavailable" || ex.Rules != nil || ex.Secrets != nil) {
			t.Errorf("Explain(%s) without a CA: %+v", c.target, ex)
		}
	}
}

// The pipeline knows a secret by its name (Explanation.Secrets): two
// secrets of one name would let one's binding admit the other.
func TestSessionSecretsNamesUnique(t *testing.T) {
	ss := &SessionSecrets{Secrets: []*Secret{
		{Binding: Binding{Name: "TOKEN", Hosts: []string{"a.example.com"}}, Placeholder: "hobbs_ph_aaaaaaaaaaaaaaaaaaaa", Value: "value-one-0123"},
		{Binding: Binding{Name: "TOKEN", Hosts: []string{"b.example.com"}}, Placeholder: "hobbs_ph_bbbbbbbbbbbbbbbbbbbb", Value: "value-two-0123"},
	}}
	if err := ss.Prepare(); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("two secrets named TOKEN: %v", err)
	}
	ss.Secrets[1].Name = "OTHER"
	if err := ss.Prepare(); err != nil {
		t.Fatal(err)
	}
	if m := ss.Matchers(); len(m) != 2 || m[0].Name != "TOKEN" || m[1].Name != "OTHER" {
		t.Fatalf("matchers: %+v", m)
	}
}
