package mcp_test

import (
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// A 2026-07-28 listing's ttlMs and cacheScope reach the caller as the
// listing's CacheHint once the listing is complete; handshake-era listings
// carry none.
func TestCache_ListingsCarryTheServersHint(t *testing.T) {
	runWith(t, []mode{inproc2026, http2026, http2026JSON, inproc2025, http2025}, func(o *setupOpts) {
		o.server.PageSize = 1
		o.server.ListTTL = 30 * time.Second
		o.server.ListCacheScope = "public"
	}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		if _, ok := b.client.ListCacheHint("resources"); ok {
			t.Fatal("a hint before any listing")
		}
		before := time.Now()
		collect(t, b.client.ListResources(ctx, nil))
		if _, err := b.client.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, list := range []string{"resources", "tools"} {
			hint, ok := b.client.ListCacheHint(list)
			if b.mode.version != mcp.Version20260728 {
				if ok {
					t.Errorf("%s: handshake-era hint %+v, want none", list, hint)
				}
				continue
			}
			if !ok || hint.TTL != 30*time.Second || hint.Scope != mcp.CachePublic {
				t.Fatalf("%s: hint %+v, %v; want 30s public", list, hint, ok)
			}
			if hint.Received.Before(before) || !hint.Fresh(hint.Received.Add(29*time.Second)) || hint.Fresh(hint.Received.Add(30*time.Second)) {
				t.Errorf("%s: hint %+v: fresh for 30s from when it was received", list, hint)
			}
		}
		// A listing the caller stopped ranging over is not complete.
		for _, err := range b.client.ListPrompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if hint, ok := b.client.ListCacheHint("prompts"); ok {
			t.Errorf("an incomplete listing left hint %+v", hint)
		}
	})
}

// A server's ttlMs of 0 (mcptest's default) means the listing is never
// fresh, and a scope other than "public" reads as private.
func TestCache_ZeroTTLIsNeverFresh(t *testing.T) {
	runWith(t, []mode{inproc2026}, func(o *setupOpts) { o.server.ListCacheScope = "shared-by-nobody" }, func(t *testing.T, b *testBundle) {
		collect(t, b.client.ResourceTemplates(testCtx(t), nil))
		hint, ok := b.client.ListCacheHint("resourceTemplates")
		if !ok || hint.TTL != 0 || hint.Fresh(hint.Received) || hint.Scope != mcp.CachePrivate {
			t.Errorf("hint %+v, %v; want a zero TTL, never fresh, private", hint, ok)
		}
	})
}
