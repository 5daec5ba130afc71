package mcp_test

// The tests named TestCaseNN cover, one for one, the given/when/then cases of
// section 4 of shared/reference/calltool-cancellation-origin.md that apply to
// stdio and byte streams (the HTTP cases C and D belong to the HTTP
// transport). Each runs over an in-process pipe and a real subprocess, on the
// 2026-07-28 and handshake-era revisions.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// Case 1: a call whose context is already cancelled sends nothing, uses no
// request id, and leaves the connection ready for the next call.
func TestCase01_PreCancelledContextSendsNothing(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		b.mustCall("echo", map[string]any{"text": "first"})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.client.CallTool(ctx, "echo", map[string]any{"text": "never"}, nil)
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool = %v, want ErrCancelled and context.Canceled", err)
		}
		b.mustCall("echo", map[string]any{"text": "second"})

		ids := b.toolCallIDs()
		if len(ids) != 2 {
			t.Fatalf("server received %d tools/call, want 2 (the cancelled one must not be sent)", len(ids))
		}
		first, _ := strconv.Atoi(ids[0])
		second, _ := strconv.Atoi(ids[1])
		if second != first+1 {
			t.Errorf("ids %v: the pre-cancelled call used up an id", ids)
		}
		if n := len(b.received("notifications/cancelled")); n != 0 {
			t.Errorf("server received %d notifications/cancelled, want 0", n)
		}
	})
}

// Case 2: a pre-cancelled context wins over an invalid timeout and over a
// closed client — the caller learns it was cancelled, first.
func TestCase02_PreCancelledBeatsInvalidTimeoutAndClosedClient(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.client.CallTool(ctx, "echo", nil, &mcp.CallOptions{Timeout: -1})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Errorf("invalid timeout: CallTool = %v, want ErrCancelled", err)
		}
		b.client.Close()
		_, err = b.client.CallTool(ctx, "echo", nil, nil)
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Errorf("closed client: CallTool = %v, want ErrCancelled", err)
		}
		if _, err := b.client.CallTool(context.Background(), "echo", nil, nil); !errors.Is(err, mcp.ErrClosed) {
			t.Errorf("closed client, live context: CallTool = %v, want ErrClosed", err)
		}
	})
}

// Case 3: a negative Timeout or MaxTotalTimeout is refused before anything
// is sent; a tiny positive one is accepted.
func TestCase03_TimeoutValidation(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025}, func(t *testing.T, b *testBundle) {
		for _, o := range []*mcp.CallOptions{{Timeout: -time.Second}, {MaxTotalTimeout: -1}} {
			_, err := b.client.CallTool(context.Background(), "echo", nil, o)
			if err == nil || errors.Is(err, mcp.ErrTimeout) {
				t.Errorf("CallTool(%+v) = %v, want a validation error", o, err)
			}
		}
		if n := len(b.toolCallIDs()); n != 0 {
			t.Errorf("server received %d tools/call for invalid options, want 0", n)
		}
		_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 5000}, &mcp.CallOptions{Timeout: time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Errorf("1ms timeout: CallTool = %v, want ErrTimeout", err)
		}
	})
}

// Case 4 (and 28): with no per-call options the client's RequestTimeout
// applies; when it fires the call is cancelled on the wire like any other
// deadline (a design decision: the spec says the sender SHOULD), and the
// late reply is dropped.
func TestCase04_DefaultTimeoutCancelsOnTheWire(t *testing.T) {
	runWith(t, []mode{inproc2026, stdio2025, http2026, http2025, http2024}, func(o *setupOpts) {
		o.client.RequestTimeout = 100 * time.Millisecond
	}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "late", nil, nil)
		if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CallTool = %v, want ErrTimeout and DeadlineExceeded", err)
		}
		b.waitFor("the late reply", isTool(mcptest.LateReply, "late"))
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
		if res := b.mustCall("echo", map[string]any{"text": "own"}); res.Text() != "own" {
			t.Errorf("next call got %q, want its own result", res.Text())
		}
	})
}

// Case 6: cancelling while waiting returns at once, tells the server as
// the transport requires (one notifications/cancelled naming the call, with
// a reason; or the response stream closed), and the server's handler stops.
func TestCase06_CancelWhileWaiting(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.cancelWhenStarted("slow", 1, cancel)
		_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil)
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool = %v, want ErrCancelled and context.Canceled", err)
		}
		if errors.Is(err, mcp.ErrTimeout) {
			t.Errorf("a cancellation must not match ErrTimeout: %v", err)
		}
		b.waitFor("the handler's cancellation", isTool(mcptest.ToolCancelled, "slow"))
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
		if notes := b.received("notifications/cancelled"); len(notes) == 1 && len(field(t, notes[0].Params, "reason")) == 0 {
			t.Errorf("notification has no reason: %s", notes[0].Params)
		}
	})
}

// Case 7: a per-call deadline stops a call to a silent server with
// ErrTimeout, and the server is told.
func TestCase07_PerCallDeadline(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CallTool = %v, want ErrTimeout and DeadlineExceeded", err)
		}
		if errors.Is(err, mcp.ErrCancelled) {
			t.Errorf("a timeout must not match ErrCancelled: %v", err)
		}
		b.waitFor("the handler's cancellation", isTool(mcptest.ToolCancelled, "slow"))
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
	})
}

// Case 8: a per-call Timeout replaces the client's RequestTimeout, both ways.
func TestCase08_DeadlineReplacesDefaultTimeout(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2025}, func(o *setupOpts) {
		o.client.RequestTimeout = 50 * time.Millisecond
	}, func(t *testing.T, b *testBundle) {
		res, err := b.client.CallTool(context.Background(), "stubborn", map[string]any{"ms": 200}, &mcp.CallOptions{Timeout: 10 * time.Second})
		if err != nil || res.Text() != "stubborn done" {
			t.Fatalf("longer per-call timeout: CallTool = %v, %v; want the result", res, err)
		}
	})
	runWith(t, []mode{inproc2026}, func(o *setupOpts) {
		o.client.RequestTimeout = time.Hour
	}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("shorter per-call timeout: CallTool = %v, want ErrTimeout", err)
		}
	})
}

// Case 9: when the caller's cancellation and a deadline both apply,
// cancellation wins.
func TestCase09_CancellationWinsOverDeadline(t *testing.T) {
	run(t, []mode{inproc2026, stdio2024}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The timeout is long enough for the tool's first progress to come
		// before it on a loaded machine; the callback cancels, then waits
		// until the timeout has passed too.
		const timeout = 2 * time.Second
		start := time.Now()
		_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{
			Timeout: timeout,
			OnProgress: func(mcp.Progress) {
				cancel()
				time.Sleep(time.Until(start.Add(timeout + 50*time.Millisecond)))
			},
		})
		if !errors.Is(err, mcp.ErrCancelled) || errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("CallTool = %v, want ErrCancelled only", err)
		}
	})
}

// Case 10: on 2026-07-28 stdio the notifications/cancelled carries the
// per-request _meta envelope (go-sdk#1212: without it a conformant server
// rejects it). Handshake-era revisions send none.
func TestCase10_ModernCancellationCarriesMetaEnvelope(t *testing.T) {
	run(t, []mode{inproc2026, stdio2026, stdio2025, http2025, http2024}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 20 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("CallTool = %v, want ErrTimeout", err)
		}
		note := b.waitFor("notifications/cancelled", isReceived("notifications/cancelled"))
		meta := field(t, note.Params, "_meta")
		if b.mode.version != mcp.Version20260728 {
			if meta != nil {
				t.Errorf("handshake-era notification carries _meta %s", meta)
			}
			return
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(meta, &env); err != nil {
			t.Fatalf("notification _meta = %s: %v", meta, err)
		}
		for _, key := range []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo"} {
			if env[key] == nil {
				t.Errorf("notification _meta lacks %s: %s", key, meta)
			}
		}
	})
}

// Cases 20, 24 and 25: a reply and progress that arrive after the cancel
// are dropped; the next call gets its own reply, and its progress callback
// never sees the stale update.
func TestCase20_LateReplyAndLateProgressAreDropped(t *testing.T) {
	// JSON responses carry no progress, so the JSON modes cannot take part.
	run(t, []mode{inproc2026, inproc2025, inproc2024, stdio2026, stdio2025, stdio2024, http2026, http2025, http2024}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stale []mcp.Progress
		_, err := b.client.CallTool(ctx, "late", nil, &mcp.CallOptions{
			OnProgress: func(p mcp.Progress) {
				stale = append(stale, p)
				cancel()
			},
		})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("CallTool = %v, want ErrCancelled", err)
		}
		b.waitFor("the late reply", isTool(mcptest.LateReply, "late"))
		var seen []mcp.Progress
		res, err := b.client.CallTool(context.Background(), "echo", map[string]any{"text": "mine"}, &mcp.CallOptions{
			OnProgress: func(p mcp.Progress) { seen = append(seen, p) },
		})
		if err != nil || res.Text() != "mine" {
			t.Fatalf("next call = %v, %v; want its own result", res, err)
		}
		if len(seen) != 0 {
			t.Errorf("next call's callback saw %v, progress that belongs to the cancelled call", seen)
		}
		if len(stale) != 1 {
			t.Errorf("cancelled call's callback ran %d times, want 1 (none after the cancel)", len(stale))
		}
	})
}

// Case 22: cancelling after the call returned sends nothing. Writes are
// ordered, so a notification sent by mistake would reach the server before
// the next call does.
func TestCase22_CancelAfterCompletionSendsNothing(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025, http2026, http2025, http2024}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := b.client.CallTool(ctx, "echo", map[string]any{"text": "done"}, nil); err != nil {
			t.Fatal(err)
		}
		cancel()
		b.mustCall("echo", map[string]any{"text": "next"})
		if n := len(b.received("notifications/cancelled")); n != 0 {
			t.Errorf("server received %d notifications/cancelled for a finished call", n)
		}
	})
}

// Case 23: a context that was cancelled for one call is refused before
// sending when reused.
func TestCase23_ReusedCancelledContextIsRefused(t *testing.T) {
	run(t, []mode{inproc2025, stdio2026, http2026, http2024}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			b.waitFor("slow to start", isTool(mcptest.ToolStarted, "slow"))
			cancel()
		}()
		if _, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("first call = %v, want ErrCancelled", err)
		}
		if _, err := b.client.CallTool(ctx, "echo", nil, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("reused context = %v, want ErrCancelled", err)
		}
		b.mustCall("echo", map[string]any{"text": "fresh"})
		if n := len(b.toolCallIDs()); n != 2 {
			t.Errorf("server received %d tools/call, want 2", n)
		}
	})
}

// Case 27: the connection stays usable after many cancels and timeouts in a
// row, and nothing is left pending.
func TestCase27_ConnectionStaysUsable(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		for i := range 4 {
			ctx, cancel := context.WithCancel(context.Background())
			var opts *mcp.CallOptions
			if i%2 == 0 {
				b.cancelWhenStarted("slow", i+1, cancel)
			} else {
				opts = &mcp.CallOptions{Timeout: 10 * time.Millisecond}
			}
			_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, opts)
			cancel()
			if !errors.Is(err, mcp.ErrCancelled) && !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("interruption %d: CallTool = %v", i, err)
			}
			text := "after " + strconv.Itoa(i)
			if res := b.mustCall("echo", map[string]any{"text": text}); res.Text() != text {
				t.Fatalf("after interruption %d: got %q", i, res.Text())
			}
		}
	})
}

// Case 29: a call in flight when the server goes away, or when the client
// is closed, fails promptly with ErrClosed rather than hanging.
func TestCase29_DisconnectWhileCallPending(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "crash", nil, nil)
		if !errors.Is(err, mcp.ErrClosed) {
			t.Fatalf("server crashed mid-call: CallTool = %v, want ErrClosed", err)
		}
		if b.mode.perRequestStream() {
			// Only that request's stream broke; the connection serves on.
			b.mustCall("echo", map[string]any{"text": "next"})
			return
		}
		if _, err := b.client.CallTool(context.Background(), "echo", nil, nil); !errors.Is(err, mcp.ErrClosed) {
			t.Errorf("after the crash: CallTool = %v, want ErrClosed", err)
		}
	})
	run(t, []mode{inproc2026, stdio2025, http2026, http2025, http2024}, func(t *testing.T, b *testBundle) {
		errc := make(chan error, 1)
		go func() {
			_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, nil)
			errc <- err
		}()
		b.waitFor("slow to start", isTool(mcptest.ToolStarted, "slow"))
		if err := b.client.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		if err := <-errc; !errors.Is(err, mcp.ErrClosed) {
			t.Errorf("Close mid-call: CallTool = %v, want ErrClosed", err)
		}
	})
}

// Case 30: with two calls in flight, cancelling one touches no other: only
// its id is named, and the other gets its own reply.
func TestCase30_OnlyTheCancelledCallIsCancelled(t *testing.T) {
	run(t, allModes, func(t *testing.T, b *testBundle) {
		ctxA, cancelA := context.WithCancel(context.Background())
		defer cancelA()
		var wg sync.WaitGroup
		var errA, errB error
		var resB *mcp.CallToolResult
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errA = b.client.CallTool(ctxA, "slow", map[string]any{"ms": 30000}, nil)
		}()
		go func() {
			defer wg.Done()
			resB, errB = b.client.CallTool(context.Background(), "stubborn", map[string]any{"ms": 300}, nil)
		}()
		b.waitFor("A to start", isTool(mcptest.ToolStarted, "slow"))
		b.waitFor("B to start", isTool(mcptest.ToolStarted, "stubborn"))
		cancelA()
		wg.Wait()
		if !errors.Is(errA, mcp.ErrCancelled) {
			t.Errorf("A = %v, want ErrCancelled", errA)
		}
		if errB != nil || resB.Text() != "stubborn done" {
			t.Errorf("B = %v, %v; want its own result", resB, errB)
		}
		var idA string
		for _, r := range b.received("tools/call") {
			if string(field(t, r.Params, "name")) == `"slow"` {
				idA = r.ID
			}
		}
		b.assertCancelledOnTheWire(idA)
	})
}

// Case 31: an ordinary cancellation logs at debug level at most.
func TestCase31_CancellationLogsNoWarning(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025, http2026, http2025, http2024}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 10 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("CallTool = %v", err)
		}
		b.waitFor("the handler's cancellation", isTool(mcptest.ToolCancelled, "slow"))
		if warn := b.logs.lines("level=WARN"); len(warn) != 0 {
			t.Errorf("warnings logged for an ordinary cancellation:\n%v", warn)
		}
	})
}

// A caller that closes the client right after a call was interrupted (as a
// CLI does on Ctrl-C) still gets the cancellation to the server: Close lets
// the notification on its way go out first. (Found in andon call.)
//
// The call is interrupted once the server has it (a timeout as short as the
// original report's would, on a loaded machine, sometimes end the call
// before it was sent — and then rightly nothing is sent about it).
func TestCancellationSurvivesAnImmediateClose(t *testing.T) {
	for range 10 {
		run(t, []mode{inproc2026, stdio2025, http2025, http2024}, func(t *testing.T, b *testBundle) {
			ctx, cancel := context.WithCancel(context.Background())
			b.cancelWhenStarted("slow", 1, cancel)
			_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil)
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("CallTool = %v", err)
			}
			b.client.Close()
			b.assertCancelledOnTheWire(b.toolCallIDs()[0])
		})
	}
}
