package mcp

import (
	"encoding/json"
	"testing"
	"time"
)

// A listing of many pages is as fresh as its shortest-lived page and as
// shareable as its narrowest; a malformed hint makes a page unfit for reuse.
func TestListingHintCombinesPages(t *testing.T) {
	page := func(ttl, scope string) pageHint {
		return pageHint{TTLMs: json.RawMessage(ttl), CacheScope: json.RawMessage(scope)}
	}
	cases := []struct {
		name  string
		pages []pageHint
		ttl   time.Duration
		scope CacheScope
	}{
		{"one page", []pageHint{page(`1500`, `"public"`)}, 1500 * time.Millisecond, CachePublic},
		{"shortest wins", []pageHint{page(`5000`, `"public"`), page(`2000`, `"public"`), page(`9000`, `"public"`)}, 2 * time.Second, CachePublic},
		{"private wins", []pageHint{page(`5000`, `"public"`), page(`5000`, `"private"`)}, 5 * time.Second, CachePrivate},
		{"missing fields", []pageHint{page(``, ``)}, 0, CachePrivate},
		{"malformed ttl", []pageHint{page(`"soon"`, `"public"`), page(`5000`, `"public"`)}, 0, CachePublic},
		{"negative ttl", []pageHint{page(`-5`, `"public"`)}, 0, CachePublic},
		{"huge ttl", []pageHint{page(`1e300`, `"public"`)}, time.Duration(maxTTLMs) * time.Millisecond, CachePublic},
	}
	for _, c := range cases {
		var l listingHint
		for _, p := range c.pages {
			l.add(p)
		}
		if l.hint.TTL != c.ttl || l.hint.Scope != c.scope {
			t.Errorf("%s: hint %+v, want TTL %v scope %s", c.name, l.hint, c.ttl, c.scope)
		}
	}
}
