package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

func TestProgress(t *testing.T) {
	run(t, progressModes, func(t *testing.T, b *testBundle) {
		var got []mcp.Progress
		res, err := b.client.CallTool(context.Background(), "progress", map[string]any{"count": 3}, &mcp.CallOptions{
			OnProgress: func(p mcp.Progress) { got = append(got, p) },
		})
		if err != nil || res.Text() != "progress done" {
			t.Fatalf("CallTool = %v, %v", res, err)
		}
		if len(got) != 3 || got[0].Progress != 1 || got[2].Progress != 3 || got[2].Total != 3 || got[2].Message != "step 3 of 3" {
			t.Fatalf("progress = %+v, want steps 1..3 of 3", got)
		}
		call := b.received("tools/call")[0]
		if token := field(t, call.Params, "_meta.progressToken"); len(token) == 0 {
			t.Errorf("request carried no progress token: %s", call.Params)
		}
	})
}

// Progress restarts the timeout only when asked, and MaxTotalTimeout bounds
// the call however much progress comes. The server reports progress every
// 20ms for 600ms against a 300ms timeout.
func TestTimeoutResetOnProgress(t *testing.T) {
	args := map[string]any{"count": 30, "interval_ms": 20}
	run(t, []mode{inproc2026, stdio2025}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "progress", args, &mcp.CallOptions{Timeout: 300 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Errorf("without reset: CallTool = %v, want ErrTimeout", err)
		}
		res, err := b.client.CallTool(context.Background(), "progress", args, &mcp.CallOptions{
			Timeout: 300 * time.Millisecond, ResetTimeoutOnProgress: true,
		})
		if err != nil || res.Text() != "progress done" {
			t.Errorf("with reset (and no callback): CallTool = %v, %v; want the result", res, err)
		}
		_, err = b.client.CallTool(context.Background(), "progress", args, &mcp.CallOptions{
			Timeout: 300 * time.Millisecond, ResetTimeoutOnProgress: true, MaxTotalTimeout: 100 * time.Millisecond,
		})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Errorf("with MaxTotalTimeout: CallTool = %v, want ErrTimeout", err)
		}
	})
}

// Many calls with progress at once: each callback sees only its own call's
// progress.
func TestProgressIsPerCall(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025}, func(t *testing.T, b *testBundle) {
		errc := make(chan error, 8)
		for i := range 8 {
			go func() {
				count := 2 + i
				n := 0
				_, err := b.client.CallTool(context.Background(), "progress", map[string]any{"count": count, "interval_ms": 1}, &mcp.CallOptions{
					OnProgress: func(p mcp.Progress) {
						n++
						if p.Total != float64(count) {
							t.Errorf("call with count %d saw progress %+v", count, p)
						}
					},
				})
				if err == nil && n != count {
					err = errors.New("progress count mismatch")
				}
				errc <- err
			}()
		}
		for range 8 {
			if err := <-errc; err != nil {
				t.Error(err)
			}
		}
	})
}

// Progress that the server sends just before its result reaches the
// callback before the call returns (found by the interop suite: the waiting
// select could take the reply first and drop the queued progress).
func TestProgressJustBeforeResultIsDelivered(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025}, func(t *testing.T, b *testBundle) {
		for i := range 300 {
			n := 0
			_, err := b.client.CallTool(context.Background(), "progress", map[string]any{"count": 1, "interval_ms": 0}, &mcp.CallOptions{
				OnProgress: func(mcp.Progress) { n++ },
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("call %d returned with %d of 1 progress notifications delivered", i, n)
			}
		}
	})
}
