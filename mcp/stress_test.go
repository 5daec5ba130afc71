package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// 1,000 calls on one connection, 50 at a time, a third of them cancelled
// and a third timed out at random moments: every call that completes gets
// its own result, every other one a clean interruption, and the connection
// still serves calls afterwards. (TestMain checks that no goroutine leaks.)
func TestStressRandomCancelsAndTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test skipped in -short mode")
	}
	run(t, []mode{inproc2026, stdio2025, http2026, http2025, http2024}, func(t *testing.T, b *testBundle) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		const calls, workers = 1000, 50
		var completed, cancelled, timedOut atomic.Int64
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for {
					n := next.Add(1)
					if n > calls {
						return
					}
					tool, args, want := "echo", map[string]any{"text": fmt.Sprint("call-", n)}, fmt.Sprint("call-", n)
					if rng.IntN(2) == 0 {
						ms := rng.IntN(5)
						tool, args, want = "slow", map[string]any{"ms": ms}, fmt.Sprintf("slept %dms", ms)
					}
					ctx, cancel := context.WithCancel(context.Background())
					var opts *mcp.CallOptions
					switch rng.IntN(3) {
					case 0:
						time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
					case 1:
						opts = &mcp.CallOptions{Timeout: time.Duration(1+rng.IntN(3000)) * time.Microsecond}
					}
					res, err := b.client.CallTool(ctx, tool, args, opts)
					cancel()
					switch {
					case err == nil:
						completed.Add(1)
						if res.Text() != want {
							t.Errorf("call %d got %q, want %q", n, res.Text(), want)
						}
					case errors.Is(err, mcp.ErrCancelled):
						cancelled.Add(1)
					case errors.Is(err, mcp.ErrTimeout):
						timedOut.Add(1)
					default:
						t.Errorf("call %d: unexpected error %v", n, err)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("completed %d, cancelled %d, timed out %d", completed.Load(), cancelled.Load(), timedOut.Load())
		if completed.Load() == 0 || cancelled.Load()+timedOut.Load() == 0 {
			t.Errorf("the mix did not exercise both outcomes")
		}
		if res := b.mustCall("echo", map[string]any{"text": "alive"}); res.Text() != "alive" {
			t.Fatalf("after the stress: got %q", res.Text())
		}
	})
}
