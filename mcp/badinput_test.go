package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A hostile or broken server costs the affected call a clear error, or the
// connection a clear error, never a panic or a hang.
func TestBadInput(t *testing.T) {
	// A JSON response body holding garbage fails its own call only.
	run(t, []mode{http2026JSON, http2025JSON}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "garbage", nil, nil)
		var pe *mcp.ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("garbage = %v, want a ProtocolError", err)
		}
		b.mustCall("echo", map[string]any{"text": "next"})
	})
	run(t, progressModes, func(t *testing.T, b *testBundle) {
		// A line that is not JSON is skipped with a warning.
		if res := b.mustCall("garbage", nil); res.Text() != "after garbage" {
			t.Errorf("garbage: got %q", res.Text())
		}
		if len(b.logs.lines("level=WARN", "malformed")) == 0 {
			t.Errorf("garbage line was not logged as a warning")
		}
		// A frame split across writes is reassembled.
		if res := b.mustCall("split", nil); res.Text() != "split answer" {
			t.Errorf("split: got %q", res.Text())
		}
		// A response for an id never sent is dropped.
		if res := b.mustCall("unknown_id", nil); res.Text() != "known id" {
			t.Errorf("unknown_id: got %q", res.Text())
		}
		// A result of the wrong shape fails that call only.
		_, err := b.client.CallTool(context.Background(), "bad_result", nil, nil)
		var pe *mcp.ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("bad_result = %v, want a ProtocolError", err)
		}
		if res := b.mustCall("echo", map[string]any{"text": "still here"}); res.Text() != "still here" {
			t.Errorf("after bad input: got %q", res.Text())
		}
	})
}

// A message larger than MaxMessageSize is skipped, never buffered: the
// request it answered fails with an error naming the limit, and only that
// one. Another call, in flight all along (its server waits for an answer
// to its elicitation, which comes only once the large one has failed),
// succeeds, and so does the next: on stdio, on HTTP+SSE's one event
// stream, and on Streamable HTTP's stream per request.
func TestMessageTooLargeFailsOnlyItsRequest(t *testing.T) {
	for _, m := range []mode{inproc2025, stdio2025, http2024, http2025} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			bigFailed := make(chan struct{})
			var o setupOpts
			o.client.MaxMessageSize = 64 << 10
			o.client.ElicitationHandler = func(ctx context.Context, _ json.RawMessage) (any, error) {
				select {
				case <-bigFailed:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
			}
			b := setup(t, m, &o)
			if res := b.mustCall("big", map[string]any{"bytes": 32 << 10}); len(res.Text()) != 32<<10 {
				t.Fatalf("big under the cap: got %d bytes", len(res.Text()))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			asked := make(chan error, 1)
			go func() {
				_, err := b.client.CallTool(ctx, "ask", map[string]any{"what": "elicitation"}, nil)
				asked <- err
			}()
			b.waitFor("the ask tool to start", isTool(mcptest.ToolStarted, "ask"))
			_, err := b.client.CallTool(ctx, "big", map[string]any{"bytes": 1 << 20}, nil)
			close(bigFailed)
			var pe *mcp.ProtocolError
			if !errors.As(err, &pe) || errors.Is(err, mcp.ErrClosed) || !strings.Contains(err.Error(), "message longer than 65536 bytes (MaxMessageSize)") {
				t.Fatalf("big over the cap = %v, want a ProtocolError naming the limit, not ErrClosed", err)
			}
			if err := <-asked; err != nil {
				t.Errorf("the call in flight = %v, want it answered", err)
			}
			if res := b.mustCall("echo", map[string]any{"text": "after"}); res.Text() != "after" {
				t.Errorf("echo after = %q", res.Text())
			}
		})
	}
}

// A server that exits mid-call: the error says so.
func TestServerExitIsExplained(t *testing.T) {
	run(t, []mode{stdio2026}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "crash", nil, nil)
		if !errors.Is(err, mcp.ErrClosed) || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("CallTool = %v, want ErrClosed naming exit status 3", err)
		}
	})
}

func TestArgumentsMustBeAnObject(t *testing.T) {
	run(t, []mode{inproc2026}, func(t *testing.T, b *testBundle) {
		for _, args := range []any{[]int{1}, "text", 3} {
			if _, err := b.client.CallTool(context.Background(), "echo", args, nil); err == nil {
				t.Errorf("CallTool(args %v) succeeded", args)
			}
		}
		if n := len(b.toolCallIDs()); n != 0 {
			t.Errorf("server received %d calls with invalid arguments", n)
		}
	})
}

func TestRPCErrorIsMatchedByCode(t *testing.T) {
	run(t, []mode{inproc2026, stdio2025}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "no_such_tool", nil, nil)
		var rpcErr *mcp.RPCError
		if !errors.As(err, &rpcErr) || !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
			t.Fatalf("unknown tool = %v, want an RPCError with code %d", err, mcp.CodeInvalidParams)
		}
		if errors.Is(err, mcp.ErrClosed) {
			t.Errorf("an RPC error must not read as a closed connection")
		}
	})
}

func TestToolResults(t *testing.T) {
	run(t, []mode{inproc2026, stdio2024}, func(t *testing.T, b *testBundle) {
		res := b.mustCall("fail", map[string]any{"message": "boom"})
		if !res.IsError || res.Text() != "boom" {
			t.Errorf("fail = %+v, want isError with text boom", res)
		}
		res = b.mustCall("echo", map[string]any{"text": "hi"})
		if res.IsError || string(res.StructuredContent) != `{"text":"hi"}` || res.Content[0].Type != "text" {
			t.Errorf("echo = %+v", res)
		}
		if res := b.mustCall("big", map[string]any{"bytes": 4 << 20}); len(res.Text()) != 4<<20 {
			t.Errorf("big: got %d bytes", len(res.Text()))
		}
	})
}
