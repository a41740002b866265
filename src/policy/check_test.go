package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	p := mustParse(t, `
domains:
  - api.example.com
  - ruled.example.com
rules:
  ruled.example.com:
    - allow GET /repos/
`)
	bound := []Binding{
		{Name: "ZED", Hosts: []string{"api.example.com"}, In: []string{"path", "header"}},
		{Name: "ALFA", Hosts: []string{"api.example.com"}, In: []string{"body"}, Requests: []string{"POST /token"}},
		{Name: "BAD", Hosts: []string{"exa mple.com"}},                           // does not parse: left out
		{Name: "BODY", Hosts: []string{"api.example.com"}, In: []string{"body"}}, // body without requests: left out
	}
	c := p.Report(Target{"api.example.com", 443, true}, bound)
	if !c.Allow || !c.Intercepted || !reflect.DeepEqual(c.Secrets, []string{"ALFA", "ZED"}) || len(c.Rules) != 0 || c.Rules == nil {
		t.Fatalf("api.example.com: %+v", c)
	}
	if want := map[string]string{"ALFA": "body (POST /token)", "ZED": "header, path"}; !reflect.DeepEqual(c.SecretsIn, want) {
		t.Fatalf("api.example.com: secrets go in %v, want %v", c.SecretsIn, want)
	}
	c = p.Report(Target{"ruled.example.com", 443, true}, nil)
	if !reflect.DeepEqual(c.Rules, []string{"allow GET /repos/ (p.yaml:7)"}) || c.Secrets == nil || len(c.Secrets) != 0 {
		t.Fatalf("ruled.example.com: %+v", c)
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"request_rules":["allow GET /repos/ (p.yaml:7)"]`) ||
		!strings.Contains(string(b), `"secrets":[]`) || !strings.Contains(string(b), `"allow":true`) {
		t.Errorf("json %s %v", b, err)
	}
	c = p.Report(Target{"evil.example.com", 443, true}, bound)
	if c.Allow || c.Rule != "default-deny" || c.Intercepted || len(c.Secrets) != 0 {
		t.Errorf("evil.example.com: %+v", c)
	}
}

func TestReportWriteSummary(t *testing.T) {
	p := mustParse(t, "domains:\n  - api.example.com\nrules:\n  api.example.com:\n    - deny DELETE\n")
	var sb strings.Builder
	p.Report(Target{"api.example.com", 443, true}, []Binding{{Name: "TOKEN", Hosts: []string{"api.example.com"}}}).WriteSummary(&sb)
	want := "allow api.example.com:443 by domains api.example.com (p.yaml:2)\n" +
		"  request rule: deny DELETE (p.yaml:5)\n" +
		"  secrets bound here (config.yaml): TOKEN (in header)\n" +
		"  HTTPS to this host is intercepted by the proxy (session CA)\n"
	if sb.String() != want {
		t.Errorf("allowed:\n%s\nwant:\n%s", sb.String(), want)
	}
	sb.Reset()
	p.Report(Target{"other.example.com", 443, true}, nil).WriteSummary(&sb)
	if want := "deny other.example.com:443 by default-deny: host is not in the allowlist\n"; sb.String() != want {
		t.Errorf("denied: %q, want %q", sb.String(), want)
	}
}

func TestDecisionHostPort(t *testing.T) {
	for _, c := range []struct {
		d    Decision
		want string
	}{
		{Decision{Host: "api.example.com", Port: 443}, "api.example.com:443"},
		{Decision{Host: "127.0.0.1", Port: 8080}, "127.0.0.1:8080"},
		{Decision{Host: "::1", Port: 8080}, "[::1]:8080"},
	} {
		if got := c.d.HostPort(); got != c.want {
			t.Errorf("HostPort(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestPolicyWriteSummary(t *testing.T) {
	p := mustParse(t, "services: [github]\ndomains:\n  - api.example.com\ndeny:\n  - gist.github.com\nallow_private: [10.0.0.0/8]\n")
	var sb strings.Builder
	if err := p.WriteSummary(&sb); err != nil {
		t.Fatal(err)
	}
	// The columns are aligned with spaces; compare with each run of them
	// as one.
	got := strings.Join(strings.Fields(strings.ReplaceAll(sb.String(), "\n", " | ")), " ")
	for _, want := range []string{
		"files: p.yaml |",
		"services: | github " + strings.Join(ServiceDomains("github"), " ") + " |",
		"domains: | api.example.com p.yaml:3 |",
		"deny: | gist.github.com p.yaml:5 |",
		"allow_private: | 10.0.0.0/8 |",
		"available services: " + strings.Join(ServiceNames(), ", ") + " |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}
