package egress

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// The proxy intercepts exactly the tunnels Explain says it does: with the
// session CA's certificate for an intercepted host, the host's own
// otherwise; request rules added to the policy make a host intercepted.
func TestServerInterceptsWhatExplainSays(t *testing.T) {
	e := startSecretEnv(t, "")
	check := func(t *testing.T, authority string) {
		t.Helper()
		tg, err := policy.ParseTarget(authority)
		if err != nil {
			t.Fatal(err)
		}
		ex := e.srv.explain(e.srv.Policy(), tg)
		if !ex.Allow {
			t.Fatalf("%s: %s", authority, ex.Rule)
		}
		tc := tls.Client(dialTunnel(t, e.addr, authority), &tls.Config{ServerName: tg.Host, RootCAs: e.caPool})
		defer tc.Close()
		err = tc.Handshake()
		if intercepted := err == nil; intercepted != ex.Intercepted() {
			t.Fatalf("%s: Explain says mode %s (secrets %v), the proxy intercepted: %v (%v)", authority, ex.Mode, ex.Secrets, intercepted, err)
		}
	}
	other := "other.test:" + e.otherPort()
	check(t, "example.com:"+e.boundPort) // GITHUB_TOKEN is bound
	check(t, other)                      // nothing bound, no rules
	e.addRules(t, fmt.Sprintf("rules:\n  %s: [\"deny DELETE\"]\n", other))
	check(t, other)
	if ex := e.srv.explain(e.srv.Policy(), policy.Target{Host: "other.test", Port: mustPort(t, e.otherPort()), Connect: true}); !ex.Intercepted() {
		t.Fatalf("rules did not make other.test intercepted: %+v", ex)
	}
}

func mustPort(t *testing.T, s string) int {
	t.Helper()
	p, err := policy.ParsePort(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
