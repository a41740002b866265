package egress

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// dnsCache remembers successful lookups for a few seconds. Go's resolver
// does not cache, so without it every tunnel to api.anthropic.com would wait
// for a DNS round trip. Cached or not, every address is checked by the
// address guard on every use, so the cache cannot let a refused address
// through; it only makes a name's addresses stable for the TTL (which also
// narrows DNS-rebinding windows instead of widening them).
type dnsCache struct {
	lookup func(context.Context, string) ([]netip.Addr, error)
	ttl    time.Duration
	mu     sync.Mutex
	m      map[string]dnsEntry
}

type dnsEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

const dnsCacheMax = 4096

func (c *dnsCache) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	if addrs, ok := c.cached(name); ok {
		return addrs, nil
	}
	now := time.Now()
	addrs, err := c.lookup(ctx, name)
	if err != nil || len(addrs) == 0 || c.ttl <= 0 {
		return addrs, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= dnsCacheMax {
		c.m = map[string]dnsEntry{} // crude but bounded: start over when full
	}
	c.m[name] = dnsEntry{addrs: append([]netip.Addr(nil), addrs...), expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return addrs, nil
}

// cached returns name's addresses if the cache has them, without waiting.
func (c *dnsCache) cached(name string) ([]netip.Addr, bool) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[name]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return append([]netip.Addr(nil), e.addrs...), true
}

// flush forgets every entry (on policy reload).
func (c *dnsCache) flush() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
