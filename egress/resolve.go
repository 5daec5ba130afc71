package egress

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Resolver looks up a host's addresses. [*net.Resolver] satisfies it; tests
// pass one they control.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// memoResolver remembers successful answers for a short time, so that a burst
// of calls to one host costs one lookup. Failures are never remembered.
type memoResolver struct {
	r   Resolver
	ttl time.Duration

	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

func (m *memoResolver) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if m.ttl > 0 {
		m.mu.Lock()
		e, ok := m.m[host]
		m.mu.Unlock()
		if ok && time.Now().Before(e.expires) {
			return e.addrs, nil
		}
	}
	addrs, err := m.r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap() // net.Resolver gives A records in IPv4-mapped form
	}
	if m.ttl > 0 && len(addrs) > 0 {
		m.mu.Lock()
		if m.m == nil {
			m.m = make(map[string]memoEntry)
		}
		m.m[host] = memoEntry{addrs: addrs, expires: time.Now().Add(m.ttl)}
		m.mu.Unlock()
	}
	return addrs, nil
}
