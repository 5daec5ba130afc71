package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// A server's elicitation and sampling requests reach the client's handlers
// with the server's params — a server→client request on handshake-era
// revisions, an input request of an input_required result on 2026-07-28 —
// and the handlers' answers reach the server.
func TestServerRequests_ElicitationAndSampling(t *testing.T) {
	forEachMode(t, []mode{inproc2026, inproc2025, stdio2026, stdio2025, http2026, http2025}, func(t *testing.T, m mode) {
		elicited, sampled := make(chan json.RawMessage, 1), make(chan json.RawMessage, 1)
		var o setupOpts
		o.client.ElicitationHandler = func(_ context.Context, params json.RawMessage) (any, error) {
			elicited <- params
			return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
		}
		o.client.SamplingHandler = func(_ context.Context, params json.RawMessage) (any, error) {
			sampled <- params
			return map[string]any{"role": "assistant", "model": "script", "content": map[string]any{"type": "text", "text": "hello"}}, nil
		}
		b := setup(t, m, &o)
		res := b.mustCall("ask", map[string]any{"what": "elicitation", "message": "Who are you?"})
		if res.IsError || res.Text() != `elicitation: {"action":"accept","content":{"name":"Ada"}}` {
			t.Errorf("elicit = %q (isError %v)", res.Text(), res.IsError)
		}
		if p := <-elicited; !strings.Contains(string(p), `"message":"Who are you?"`) || !strings.Contains(string(p), `"required":["name"]`) {
			t.Errorf("the handler was asked %s", p)
		}
		res = b.mustCall("ask", map[string]any{"what": "sampling", "message": "Say hi."})
		if res.IsError || !strings.HasPrefix(res.Text(), "sampling: {") || !strings.Contains(res.Text(), `"role":"assistant"`) || !strings.Contains(res.Text(), `"text":"hello"`) {
			t.Errorf("sample = %q (isError %v)", res.Text(), res.IsError)
		}
		if p := <-sampled; !strings.Contains(string(p), `"text":"Say hi."`) {
			t.Errorf("the handler was asked %s", p)
		}
		if b.mode.version == mcp.Version20260728 {
			if n := len(b.received("tools/call")); n != 4 {
				t.Errorf("server received %d tools/call, want 4 (two rounds each)", n)
			}
		}
	})
}

// A call waiting on the client's handler is still the caller's: when it is
// interrupted the handler's context ends — on 2026-07-28 with the call
// itself, on handshake-era revisions when the server, told that the call is
// cancelled, cancels its own request (as mcptest does).
func TestServerRequests_CancelWhileTheHandlerRuns(t *testing.T) {
	forEachMode(t, []mode{inproc2026, inproc2025, stdio2025, http2025}, func(t *testing.T, m mode) {
		handlerStarted, handlerDone := make(chan struct{}), make(chan error, 1)
		var o setupOpts
		o.client.ElicitationHandler = func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(handlerStarted)
			<-ctx.Done() // an operator who never answers
			handlerDone <- ctx.Err()
			return nil, ctx.Err()
		}
		b := setup(t, m, &o)
		// Cancelled once the handler runs, not after a fixed time: on a
		// loaded machine a deadline can pass before the question is asked.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-handlerStarted:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := b.client.CallTool(ctx, "ask", map[string]any{"what": "elicitation"}, nil)
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("CallTool = %v, want it interrupted", err)
		}
		select {
		case err := <-handlerDone:
			if err == nil {
				t.Error("the handler's context did not end")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler's context never ended")
		}
	})
}

// forEachMode runs f once per mode as parallel subtests, for a test that
// needs state of its own per mode (handlers that report to the subtest).
func forEachMode(t *testing.T, modes []mode, f func(t *testing.T, m mode)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}
