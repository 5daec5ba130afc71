package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// Over stdio, with nothing else being written, a cancelled call's
// notifications/cancelled is on the wire before CallTool returns: written
// from the caller's goroutine, not left to one that runs after it (in a
// storm, after every other woken caller's own work). OnCancelSent, which
// is told once it is written, has been told by then, every time.
func TestStdioCancelIsWrittenBeforeCallToolReturns(t *testing.T) {
	for _, m := range []mode{stdio2025, stdio2026} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var told atomic.Int64
			b := setup(t, m, &setupOpts{client: mcp.ClientOptions{OnCancelSent: func(string, time.Duration) { told.Add(1) }}})
			const n = 20
			for i := range n {
				ctx, cancel := context.WithCancel(context.Background())
				b.cancelWhenStarted("slow", i+1, cancel)
				_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000, "tag": fmt.Sprint(i)}, nil)
				cancel()
				if !errors.Is(err, mcp.ErrCancelled) {
					t.Fatalf("call %d: CallTool = %v, want ErrCancelled", i, err)
				}
				if got := told.Load(); got != int64(i+1) {
					t.Fatalf("call %d: CallTool returned with %d cancellations written, want %d", i, got, i+1)
				}
			}
			for _, id := range b.toolCallIDs() {
				b.waitFor("the cancellation of call "+id, func(r mcptest.Record) bool {
					return r.Kind == mcptest.Received && r.Method == "notifications/cancelled" && string(field(t, r.Params, "requestId")) == id
				})
			}
		})
	}
}
