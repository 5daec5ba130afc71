package mcp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// SetRoots changes what the server gets when it asks for roots, and on
// handshake-era revisions tells it with notifications/roots/list_changed;
// 2026-07-28 has no such notification, and nothing is sent.
func TestRoots_SetRootsNotifiesAndServesTheNewRoots(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2025, inproc2024, stdio2026, stdio2025, http2025, http2026}, func(o *setupOpts) {
		o.client.Roots = []mcp.Root{{URI: "file:///old"}}
	}, func(t *testing.T, b *testBundle) {
		if got := b.mustCall("ask", nil).Text(); got != `roots: {"roots":[{"uri":"file:///old"}]}` {
			t.Fatalf("ask before SetRoots = %q", got)
		}
		if err := b.client.SetRoots(testCtx(t), []mcp.Root{{URI: "file:///new", Name: "new"}}); err != nil {
			t.Fatalf("SetRoots: %v", err)
		}
		if b.mode.version == mcp.Version20260728 {
			if n := len(b.received("notifications/roots/list_changed")); n != 0 {
				t.Errorf("2026-07-28 server received %d notifications/roots/list_changed, want none", n)
			}
		} else {
			b.waitFor("notifications/roots/list_changed", func(r mcptest.Record) bool {
				return r.Kind == mcptest.Received && r.Method == "notifications/roots/list_changed"
			})
		}
		if got := b.mustCall("ask", nil).Text(); got != `roots: {"roots":[{"uri":"file:///new","name":"new"}]}` {
			t.Errorf("ask after SetRoots = %q, want the new roots", got)
		}
	})
}

// The roots capability says list_changed may come, and a client without
// roots cannot start sending them.
func TestRoots_CapabilityAndWithoutRoots(t *testing.T) {
	runWith(t, []mode{inproc2025}, func(o *setupOpts) { o.client.Roots = []mcp.Root{} }, func(t *testing.T, b *testBundle) {
		init := b.received("initialize")[0]
		if got := string(field(t, init.Params, "capabilities")); got != `{"roots":{"listChanged":true}}` {
			t.Errorf("capabilities = %s", got)
		}
	})
	run(t, []mode{inproc2025}, func(t *testing.T, b *testBundle) {
		err := b.client.SetRoots(testCtx(t), []mcp.Root{{URI: "file:///x"}})
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("SetRoots without the capability = %v, want ErrUnsupported", err)
		}
		if n := len(b.received("notifications/roots/list_changed")); n != 0 {
			t.Errorf("server received %d notifications/roots/list_changed", n)
		}
	})
	runWith(t, []mode{inproc2025}, func(o *setupOpts) { o.client.Roots = []mcp.Root{} }, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.client.SetRoots(ctx, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("SetRoots with a cancelled ctx = %v, want ErrCancelled", err)
		}
		if n := len(b.received("notifications/roots/list_changed")); n != 0 {
			t.Errorf("a cancelled SetRoots sent %d notifications", n)
		}
		if got := b.mustCall("ask", nil).Text(); got != `roots: {"roots":[]}` {
			t.Errorf("ask after SetRoots(nil) = %q, want an empty list", got)
		}
	})
}
