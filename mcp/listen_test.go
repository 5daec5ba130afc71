package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// listenModes are the 2026-07-28 modes whose listen stream can carry
// notifications: a pipe, a subprocess, and HTTP with event streams.
var listenModes = []mode{inproc2026, stdio2026, http2026}

// listening is a Listen running on a goroutine of its own.
type listening struct {
	acked   chan mcp.SubscriptionFilter
	done    chan error
	changed chan string // OnListChanged
	updated chan string // OnResourceUpdated
}

// listenSetup returns options whose callbacks report to l.
func listenSetup(l *listening) setupOpts {
	var o setupOpts
	o.client.OnListChanged = func(list string) { l.changed <- list }
	o.client.OnResourceUpdated = func(uri string) { l.updated <- uri }
	o.server.ListTTL = time.Minute
	return o
}

func newListening() *listening {
	return &listening{acked: make(chan mcp.SubscriptionFilter, 1), done: make(chan error, 1), changed: make(chan string, 8), updated: make(chan string, 8)}
}

// start runs Listen on ctx and waits for the server's acknowledgment.
func (l *listening) start(t *testing.T, ctx context.Context, c *mcp.Client, filter mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	t.Helper()
	go func() { l.done <- c.Listen(ctx, filter, func(f mcp.SubscriptionFilter) { l.acked <- f }) }()
	select {
	case f := <-l.acked:
		return f
	case err := <-l.done:
		t.Fatalf("Listen ended before its acknowledgment: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgment of subscriptions/listen")
	}
	return mcp.SubscriptionFilter{}
}

func receive[T any](t *testing.T, what string, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	var zero T
	return zero
}

func readText(t *testing.T, b *testBundle, uri string) string {
	t.Helper()
	res, err := b.client.ReadResource(testCtx(t), uri, nil)
	if err != nil {
		t.Fatalf("ReadResource(%s): %v", uri, err)
	}
	return res.Contents[0].Text
}

// On 2026-07-28 list changes and resource updates come on a
// subscriptions/listen stream: the server acknowledges the filter, what it
// announces reaches OnListChanged and OnResourceUpdated (and makes the
// listing's cache hint stale), and cancelling the listen closes the stream
// on the wire as any cancelled request: notifications/cancelled on stdio,
// the stream closed and nothing sent over HTTP.
func TestListen_DeliversChangesUntilCancelled(t *testing.T) {
	forEachMode(t, listenModes, func(t *testing.T, m mode) {
		l := newListening()
		o := listenSetup(l)
		b := setup(t, m, &o)
		if _, err := b.client.ListTools(testCtx(t), nil); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.client.ListCacheHint("tools"); !ok {
			t.Fatal("no cache hint for tools/list")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		filter := mcp.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{"mcptest://static/hello"}}
		if got := l.start(t, ctx, b.client, filter); !got.ToolsListChanged || !got.ResourcesListChanged || got.PromptsListChanged || len(got.ResourceSubscriptions) != 1 {
			t.Errorf("acknowledged %+v, want what was asked", got)
		}
		if got := readText(t, b, "mcptest://change/tools"); got != "sent to 1" {
			t.Errorf("change/tools = %q", got)
		}
		if got := receive(t, "tools list_changed", l.changed); got != "tools" {
			t.Errorf("OnListChanged(%q), want tools", got)
		}
		if hint, ok := b.client.ListCacheHint("tools"); ok {
			t.Errorf("tools hint %+v survived a list_changed", hint)
		}
		if got := readText(t, b, "mcptest://change/prompts"); got != "sent to 0" {
			t.Errorf("change/prompts = %q, want nothing sent (not asked for)", got)
		}
		if got := readText(t, b, "mcptest://touch"); got != "1 updates" {
			t.Errorf("touch = %q", got)
		}
		if got := receive(t, "resources/updated", l.updated); got != "mcptest://static/hello" {
			t.Errorf("OnResourceUpdated(%q)", got)
		}

		cancel()
		if err := receive(t, "the end of Listen", l.done); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("Listen = %v, want ErrCancelled", err)
		}
		listen := b.received("subscriptions/listen")
		if len(listen) != 1 {
			t.Fatalf("server received %d subscriptions/listen", len(listen))
		}
		b.waitFor("the listen's end", func(r mcptest.Record) bool { return r.Kind == mcptest.ListenEnded && r.ID == listen[0].ID })
		b.assertRequestCancelledOnTheWire("subscriptions/listen", listen[0].ID)
		if got := readText(t, b, "mcptest://change/tools"); got != "sent to 0" {
			t.Errorf("after the cancel, change/tools = %q, want no stream left", got)
		}
	})
}

// A server may end the stream itself: with the listen's result (Listen
// returns nil) or, as the cancellation page has it, with
// notifications/cancelled naming it (ErrSubscriptionEnded). Either way the
// client sends nothing back, and may listen again.
func TestListen_ServerEndsTheStream(t *testing.T) {
	for _, how := range []string{"result", "cancel"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			forEachMode(t, listenModes, func(t *testing.T, m mode) {
				l := newListening()
				o := listenSetup(l)
				b := setup(t, m, &o)
				l.start(t, context.Background(), b.client, mcp.SubscriptionFilter{PromptsListChanged: true})
				if got := readText(t, b, "mcptest://unlisten/"+how); got != "ended 1" {
					t.Fatalf("unlisten = %q", got)
				}
				err := receive(t, "the end of Listen", l.done)
				if how == "result" && err != nil || how == "cancel" && !errors.Is(err, mcp.ErrSubscriptionEnded) {
					t.Fatalf("Listen = %v", err)
				}
				if n := len(b.received("notifications/cancelled")); n != 0 {
					t.Errorf("the client sent %d notifications/cancelled for a stream the server ended", n)
				}
				l.start(t, context.Background(), b.client, mcp.SubscriptionFilter{PromptsListChanged: true}) // again
				if got := readText(t, b, "mcptest://unlisten/result"); got != "ended 1" {
					t.Errorf("second unlisten = %q", got)
				}
				if err := receive(t, "the end of the second Listen", l.done); err != nil {
					t.Errorf("second Listen = %v", err)
				}
			})
		})
	}
}

// Listen exists on 2026-07-28 only, and one stream at a time.
func TestListen_Refusals(t *testing.T) {
	run(t, []mode{inproc2025}, func(t *testing.T, b *testBundle) {
		if err := b.client.Listen(testCtx(t), mcp.SubscriptionFilter{ToolsListChanged: true}, nil); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("Listen on 2025-11-25 = %v, want ErrUnsupported", err)
		}
		if n := len(b.received("subscriptions/listen")); n != 0 {
			t.Errorf("server received %d subscriptions/listen", n)
		}
	})
	forEachMode(t, []mode{inproc2026}, func(t *testing.T, m mode) {
		l := newListening()
		o := listenSetup(l)
		b := setup(t, m, &o)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l.start(t, ctx, b.client, mcp.SubscriptionFilter{ToolsListChanged: true})
		if err := b.client.Listen(testCtx(t), mcp.SubscriptionFilter{}, nil); err == nil {
			t.Error("a second Listen while one is open succeeded")
		}
		cancel()
		receive(t, "the end of Listen", l.done)
	})
}
