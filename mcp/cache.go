package mcp

import (
	"encoding/json"
	"math"
	"time"
)

// CacheScope says who may reuse a cached result (2026-07-28): anyone
// ("public"), or only the principal that asked ("private").
type CacheScope string

// The cache scopes of 2026-07-28.
const (
	CachePublic  CacheScope = "public"
	CachePrivate CacheScope = "private"
)

// CacheHint is what a 2026-07-28 server says of a listing (tools/list,
// resources/list, resources/templates/list, prompts/list): its result may be
// reused for TTL after it was received, by the principals Scope allows.
// Handshake-era servers give no hints.
type CacheHint struct {
	// TTL is how long the listing stays fresh. Zero means it must not be
	// reused.
	TTL time.Duration
	// Scope is who may reuse it. A listing of many pages takes the
	// narrowest scope of its pages; an unknown or missing scope reads
	// CachePrivate.
	Scope CacheScope
	// Received is when the listing's last page arrived, from which TTL
	// counts.
	Received time.Time
}

// Fresh reports whether the listing may still be reused at now.
func (h CacheHint) Fresh(now time.Time) bool {
	return h.TTL > 0 && now.Before(h.Received.Add(h.TTL))
}

// ListCacheHint returns the cache hint of the most recent complete listing
// of list: "tools", "resources", "resourceTemplates" or "prompts". ok is
// false when there is none: no complete listing yet, a handshake-era server
// (which gives no hints), or a list-changed notification for that list since
// (which makes the listing stale whatever its TTL said). A listing of many
// pages is fresh as long as its shortest-lived page.
//
// The client keeps the hint, not the listing: a caller that caches what it
// listed (a catalogue of imported tools) asks [CacheHint.Fresh] before it
// lists again.
func (c *Client) ListCacheHint(list string) (hint CacheHint, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hint, ok = c.hints[list]
	return hint, ok
}

// pageHint is the cache hint one page of a listing carries, raw: a
// malformed hint makes the page unfit for reuse, never the listing fail.
type pageHint struct {
	TTLMs      json.RawMessage `json:"ttlMs"`
	CacheScope json.RawMessage `json:"cacheScope"`
}

// listingHint accumulates the hints of a listing's pages: the shortest TTL
// and the narrowest scope.
type listingHint struct {
	seen bool
	hint CacheHint
}

func (l *listingHint) add(p pageHint) {
	ttl := time.Duration(0)
	var ms float64
	if json.Unmarshal(p.TTLMs, &ms) == nil && ms > 0 {
		ttl = time.Duration(math.Min(ms, maxTTLMs)) * time.Millisecond
	}
	var scope CacheScope
	if json.Unmarshal(p.CacheScope, &scope) != nil || scope != CachePublic {
		scope = CachePrivate
	}
	if !l.seen {
		l.seen, l.hint = true, CacheHint{TTL: ttl, Scope: scope}
		return
	}
	l.hint.TTL = min(l.hint.TTL, ttl)
	if scope == CachePrivate {
		l.hint.Scope = CachePrivate
	}
}

// finish records the hint of a complete listing of list, on a revision
// whose results carry hints.
func (c *Client) finishListing(list string, l *listingHint) {
	if !c.rev.mrtr || !l.seen {
		return
	}
	l.hint.Received = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hints == nil {
		c.hints = map[string]CacheHint{}
	}
	c.hints[list] = l.hint
}

// staleListing forgets the hints of the lists a notifications/{list}/
// list_changed concerns: resources covers the templates too.
func (c *Client) staleListing(list string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.hints, list)
	if list == "resources" {
		delete(c.hints, "resourceTemplates")
	}
}

// decodePageHint reads a page's hint from its raw fields.
func decodePageHint(items map[string]json.RawMessage) pageHint {
	return pageHint{TTLMs: items["ttlMs"], CacheScope: items["cacheScope"]}
}

// maxTTLMs caps a TTL so that it fits a time.Duration.
const maxTTLMs = float64(math.MaxInt64 / int64(time.Millisecond))
