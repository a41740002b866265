package egress

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// TestDNSCacheNeverBypassesGuard: a cached name whose addresses the policy
// stops allowing (reload) is refused at once, and the cache does serve
// repeated lookups.
func TestDNSCacheNeverBypassesGuard(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	var lookups atomic.Int64
	e := startProxy(t, basePolicy(tg.port), func(o *Options) {
		o.DNSCacheTTL = time.Minute
		inner := fakeResolver(nil)
		o.LookupNetIP = func(ctx context.Context, h string) ([]netip.Addr, error) {
			lookups.Add(1)
			return inner(ctx, h)
		}
	})
	auth := fmt.Sprintf("allowed.test:%d", tg.port)
	for i := 0; i < 3; i++ {
		if code, body := e.tunnel(t, auth, ""); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for 3 tunnels, want 1 (cached)", n)
	}
	// Close loopback: the cached 127.0.0.1 must now be refused.
	pol := fmt.Sprintf("domains: [\"allowed.test:%d\"]\n", tg.port)
	if err := writeAndReload(e, pol); err != nil {
		t.Fatal(err)
	}
	before := tg.conns.Load()
	if code, body := e.tunnel(t, auth, ""); code != 403 {
		t.Fatalf("cached private address let through: %d %s", code, body)
	}
	if tg.conns.Load() != before {
		t.Fatal("target reached")
	}
}

func writeAndReload(e *proxyEnv, policy string) error {
	if err := writeFile(e.policy, policy); err != nil {
		return err
	}
	return e.srv.Reload()
}
