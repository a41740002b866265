package mail_test

import (
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

// TestResolver: DKIM keys are looked up over real DNS at the one server
// named (a DNS server on loopback): a message signed with a key it holds
// verifies, one whose key it does not hold does not.
func TestResolver(t *testing.T) {
	key, other := mailtest.NewKey("example.org"), mailtest.NewKey("example.org")
	dns := mailtest.StartDNS(t, key)
	r := mail.Rules{From: []string{"alice@example.org"}, LookupTXT: mail.Resolver(dns.Addr)}
	if ok, why := mail.Check(key.Sign(mailtest.Message("alice@example.org", "h@test", "x", "x")), "alice@example.org", r); !ok {
		t.Errorf("signed with the published key: %s", why)
	}
	if ok, why := mail.Check(other.Sign(mailtest.Message("alice@example.org", "h@test", "x", "x")), "alice@example.org", r); ok || !strings.Contains(why, "does not verify") {
		t.Errorf("signed with another key: %v %s", ok, why)
	}
	if ok, why := mail.Check(mailtest.NewKey("other.example").Sign(mailtest.Message("bob@other.example", "h@test", "x", "x")), "bob@other.example",
		mail.Rules{From: []string{"bob@other.example"}, LookupTXT: mail.Resolver(dns.Addr)}); ok {
		t.Errorf("a domain the server does not know: %s", why)
	}
	if n := dns.Queries.Load(); n < 3 {
		t.Errorf("%d DNS queries, want one a message", n)
	}
}
