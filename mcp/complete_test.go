package mcp_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// Complete sends the ref and the argument as the protocol has them and
// returns the server's values; a ref the server cannot complete is its
// *RPCError.
func TestComplete(t *testing.T) {
	run(t, resourceModes, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		got, err := b.client.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("greet"), Argument: "style", Value: "a p"}, nil)
		if err != nil {
			t.Fatalf("Complete(prompt): %v", err)
		}
		if !slices.Equal(got.Values, []string{"a pirate", "a poet"}) || got.Total != 2 || got.HasMore {
			t.Errorf("Complete(prompt) = %+v", got)
		}
		got, err = b.client.Complete(ctx, mcp.CompleteRequest{Ref: mcp.ResourceRef("mcptest://large/{bytes}"), Argument: "bytes", Value: "10", Context: map[string]string{"x": "y"}}, nil)
		if err != nil || !slices.Equal(got.Values, []string{"10", "100", "1000"}) {
			t.Errorf("Complete(resource) = %+v, %v", got, err)
		}
		reqs := b.received("completion/complete")
		if ref := string(field(t, reqs[1].Params, "ref")); ref != `{"type":"ref/resource","uri":"mcptest://large/{bytes}"}` {
			t.Errorf("ref sent = %s", ref)
		}
		if arg := string(field(t, reqs[1].Params, "context.arguments.x")); arg != `"y"` {
			t.Errorf("context sent = %s", reqs[1].Params)
		}
		if _, err := b.client.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("plain"), Argument: "x"}, nil); !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
			t.Errorf("Complete(plain) = %v, want invalid params", err)
		}
	})
}

// logging/setLevel reaches the server, which then sends only messages of
// that level and above; those reach the client's logger with the server's
// name and level. 2026-07-28 has no logging/setLevel: nothing is sent.
func TestSetLoggingLevelAndServerLogMessages(t *testing.T) {
	run(t, []mode{inproc2025, inproc2024, stdio2025, http2025, http2024}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		if err := b.client.SetLoggingLevel(ctx, "warning", nil); err != nil {
			t.Fatalf("SetLoggingLevel: %v", err)
		}
		if got := string(field(t, b.received("logging/setLevel")[0].Params, "level")); got != `"warning"` {
			t.Errorf("level sent = %s", got)
		}
		for uri, want := range map[string]string{"mcptest://log/info": "filtered", "mcptest://log/error": "logged"} {
			res, err := b.client.ReadResource(ctx, uri, nil)
			if err != nil || res.Contents[0].Text != want {
				t.Fatalf("ReadResource(%s) = %+v, %v; want %s", uri, res, err, want)
			}
		}
		lines := b.logs.lines("mcp: server log", "a error message")
		if len(lines) != 1 {
			t.Fatalf("logged server messages:\n%s", b.logs.String())
		}
		for _, want := range []string{"level=ERROR", "server=mcptest", "level=error", "logger=mcptest"} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("log line %q lacks %q", lines[0], want)
			}
		}
		if l := b.logs.lines("a info message"); len(l) != 0 {
			t.Errorf("a filtered message was logged: %q", l)
		}
	})
	// 2026-07-28 has no logging/setLevel: the level rides in each later
	// request's _meta, and a request without it gets no log messages.
	run(t, []mode{inproc2026, stdio2026, http2026}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		if res, err := b.client.ReadResource(ctx, "mcptest://log/error", nil); err != nil || res.Contents[0].Text != "filtered" {
			t.Fatalf("before SetLoggingLevel: ReadResource = %+v, %v; want filtered (no logLevel, no messages)", res, err)
		}
		if err := b.client.SetLoggingLevel(ctx, "warning", nil); err != nil {
			t.Fatalf("SetLoggingLevel on 2026-07-28: %v", err)
		}
		if n := len(b.received("logging/setLevel")); n != 0 {
			t.Errorf("server received %d logging/setLevel", n)
		}
		for uri, want := range map[string]string{"mcptest://log/info": "filtered", "mcptest://log/error": "logged"} {
			res, err := b.client.ReadResource(ctx, uri, nil)
			if err != nil || res.Contents[0].Text != want {
				t.Fatalf("ReadResource(%s) = %+v, %v; want %s", uri, res, err, want)
			}
		}
		reads := b.received("resources/read")
		var meta map[string]json.RawMessage
		json.Unmarshal(field(t, reads[len(reads)-1].Params, "_meta"), &meta)
		if got := string(meta["io.modelcontextprotocol/logLevel"]); got != `"warning"` {
			t.Errorf("_meta logLevel = %s, want \"warning\"", got)
		}
		if lines := b.logs.lines("mcp: server log", "a error message"); len(lines) != 1 {
			t.Errorf("logged server messages:\n%s", b.logs.String())
		}
		if err := b.client.SetLoggingLevel(ctx, "loud", nil); err == nil {
			t.Error("SetLoggingLevel accepted an unknown level")
		}
	})
}
