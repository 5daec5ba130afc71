package interop

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// The tests in this file run andon's client against a go-sdk v1.8.0 server
// in a subprocess over stdio, on each revision in revisions.
//
// go-sdk's StdioTransport does not implement ProtocolVersionSupporter, so
// its server offers every revision it supports over stdio, 2026-07-28
// included (go-sdk mcp/server.go filterSupportedVersions and
// mcp/transport.go StdioTransport); the echo tool reports the revision the
// server sees, so the tests check both ends agree.

func TestAndonToGoSDKEcho(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, _ := andonToGoSDK(t, rev)
			if name := c.Server().Implementation.Name; name != "interop-gosdk" {
				t.Errorf("server name %q, want interop-gosdk", name)
			}
			ctx := t.Context()
			tools, err := c.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("listing tools: %v", err)
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if want := []string{"echo", "progress", "slow"}; !slices.Equal(names, want) {
				t.Errorf("tools %v, want %v", names, want)
			}
			res := callEcho(t, c, "hello, go-sdk")
			var out echoOut
			if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
				t.Fatalf("echo's structured content %s: %v", res.StructuredContent, err)
			}
			if out.ProtocolVersion != rev {
				t.Errorf("the server sees revision %q, the client %q", out.ProtocolVersion, rev)
			}
		})
	}
}

func TestAndonToGoSDKCancelMidCall(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, events := andonToGoSDK(t, rev)
			const tag = "cancel-1"
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "slow", map[string]any{"tag": tag}, nil)
				errc <- err
			}()
			waitEvent(t, events, evStarted, tag)
			cancel()
			err := <-errc // CallTool never outlives the request timeout
			if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
				t.Fatalf("CallTool after cancel returned %v, want ErrCancelled and context.Canceled", err)
			}
			if errors.Is(err, mcp.ErrTimeout) {
				t.Errorf("a cancelled call also matches ErrTimeout: %v", err)
			}
			waitEvent(t, events, evCancelled, tag)
			if _, ok := findEvent(t, events, evFinished, tag); ok {
				t.Errorf("the handler finished although it was cancelled")
			}
			callEcho(t, c, "still here after a cancel")
		})
	}
}

// timeoutShort is the per-call Timeout of the timeout tests.
const timeoutShort = 100 * time.Millisecond

func TestAndonToGoSDKTimeout(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, events := andonToGoSDK(t, rev)
			const tag = "timeout-1"
			_, err := c.CallTool(t.Context(), "slow", map[string]any{"tag": tag}, &mcp.CallOptions{Timeout: timeoutShort})
			if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("CallTool past its Timeout returned %v, want ErrTimeout and context.DeadlineExceeded", err)
			}
			if errors.Is(err, mcp.ErrCancelled) {
				t.Errorf("a timed-out call also matches ErrCancelled: %v", err)
			}
			// The request went out long before the timeout, so the handler
			// ran; it must have been cancelled, not left to sleep.
			waitEvent(t, events, evStarted, tag)
			waitEvent(t, events, evCancelled, tag)
			callEcho(t, c, "still here after a timeout")
		})
	}
}

func TestAndonToGoSDKProgress(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, _ := andonToGoSDK(t, rev)
			const count = 3
			var got []mcp.Progress
			res, err := c.CallTool(t.Context(), "progress", map[string]any{"count": count, "interval_ms": 5}, &mcp.CallOptions{
				OnProgress: func(p mcp.Progress) { got = append(got, p) },
			})
			if err != nil {
				t.Fatalf("calling progress: %v", err)
			}
			if res.Text() != "progress done" {
				t.Errorf("progress returned %q", res.Text())
			}
			if len(got) != count {
				t.Errorf("OnProgress got %d notifications, want %d: %+v", len(got), count, got)
			}
			for i, p := range got {
				if p.Progress != float64(i+1) || p.Total != count || p.Message == "" {
					t.Errorf("progress %d is %+v, want step %d of %d", i, p, i+1, count)
				}
			}
		})
	}
}

// TestProgressBeforeResultIsDelivered: every progress notification the
// server sends before its result must reach OnProgress before CallTool
// returns.
//
// The go-sdk handler sends each notification synchronously, before it
// returns, so the notification is on the wire before the response. andon's
// reader queues the progress before it hands over the reply, but
// Client.exchange waits in a select on both; when both were ready, Go picked
// one at random, and on the reply it returned without draining the queued
// progress. The last progress of a call was lost now and then (observed:
// 1-4% of calls with one progress step and no pause, on a 2-core machine),
// until commit 558f669 drained the queue before returning a reply.
func TestProgressBeforeResultIsDelivered(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, _ := andonToGoSDK(t, rev)
			const calls = 1000
			lost := 0
			for range calls {
				n := 0
				_, err := c.CallTool(t.Context(), "progress", map[string]any{"count": 1}, &mcp.CallOptions{
					OnProgress: func(mcp.Progress) { n++ },
				})
				if err != nil {
					t.Fatalf("calling progress: %v", err)
				}
				if n != 1 {
					lost++
				}
			}
			if lost > 0 {
				t.Errorf("%d of %d calls returned without delivering the progress notification the server sent before its result", lost, calls)
			}
		})
	}
}
