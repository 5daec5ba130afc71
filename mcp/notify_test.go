package mcp_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// notifyModes carry a server's notifications: the handshake era (2026-07-28
// sends them only on subscriptions/listen), on every transport but JSON
// responses.
var notifyModes = []mode{inproc2025, inproc2024, stdio2025, http2025, http2024}

// seen collects what a callback was told.
type seen struct {
	mu  sync.Mutex
	got []string
}

func (s *seen) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, v)
}

// waitFor waits until n values arrived (the callbacks run on goroutines of
// their own), and returns them sorted. The deadline only keeps a broken
// test from hanging.
func (s *seen) waitFor(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := slices.Sorted(slices.Values(s.got))
		s.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// A subscribed resource's updates reach OnResourceUpdated until it is
// unsubscribed.
func TestSubscribeDeliversUpdatesUntilUnsubscribed(t *testing.T) {
	for _, m := range notifyModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var updates seen
			b := setup(t, m, &setupOpts{client: mcp.ClientOptions{OnResourceUpdated: updates.add}})
			ctx := testCtx(t)
			if err := b.client.Subscribe(ctx, "mcptest://static/hello", nil); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			if got := string(field(t, b.received("resources/subscribe")[0].Params, "uri")); got != `"mcptest://static/hello"` {
				t.Errorf("subscribe sent uri %s", got)
			}
			touch := func(want string) {
				t.Helper()
				res, err := b.client.ReadResource(ctx, "mcptest://touch", nil)
				if err != nil || res.Contents[0].Text != want {
					t.Fatalf("touch = %+v, %v; want %q", res, err, want)
				}
			}
			touch("1 updates")
			// One update on subscribing, one for the touch.
			if got := updates.waitFor(t, 2); !slices.Equal(got, []string{"mcptest://static/hello", "mcptest://static/hello"}) {
				t.Fatalf("OnResourceUpdated got %q, want the URI twice", got)
			}
			if err := b.client.Unsubscribe(ctx, "mcptest://static/hello", nil); err != nil {
				t.Fatalf("Unsubscribe: %v", err)
			}
			if n := len(b.received("resources/unsubscribe")); n != 1 {
				t.Errorf("server received %d resources/unsubscribe, want 1", n)
			}
			touch("0 updates")
		})
	}
}

// List-changed notifications reach OnListChanged, naming the list.
func TestListChangedReachesTheCallback(t *testing.T) {
	for _, m := range notifyModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var lists seen
			b := setup(t, m, &setupOpts{client: mcp.ClientOptions{OnListChanged: lists.add}})
			for _, list := range []string{"tools", "resources", "prompts"} {
				res, err := b.client.ReadResource(testCtx(t), "mcptest://change/"+list, nil)
				if err != nil || res.Contents[0].Text != "sent" {
					t.Fatalf("change/%s = %+v, %v", list, res, err)
				}
			}
			if got := lists.waitFor(t, 3); !slices.Equal(got, []string{"prompts", "resources", "tools"}) {
				t.Errorf("OnListChanged got %q, want prompts, resources, tools", got)
			}
		})
	}
}

// On 2026-07-28 Subscribe and Unsubscribe send nothing and say so.
func TestSubscribeUnsupportedOn2026(t *testing.T) {
	run(t, []mode{inproc2026, http2026}, func(t *testing.T, b *testBundle) {
		for _, err := range []error{
			b.client.Subscribe(context.Background(), "mcptest://static/hello", nil),
			b.client.Unsubscribe(context.Background(), "mcptest://static/hello", nil),
		} {
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("= %v, want ErrUnsupported", err)
			}
		}
		if n := len(b.received("resources/subscribe")) + len(b.received("resources/unsubscribe")); n != 0 {
			t.Errorf("server received %d subscription requests", n)
		}
	})
}
