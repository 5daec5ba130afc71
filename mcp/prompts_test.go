package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// Prompts are listed across pages and rendered with their arguments, which
// reach the server as sent.
func TestPrompts_ListAndGetWithArguments(t *testing.T) {
	runWith(t, resourceModes, func(o *setupOpts) {
		o.server.PageSize = 1
		o.serverArgs = []string{"-page-size", "1"}
	}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		prompts := collect(t, b.client.ListPrompts(ctx, nil))
		var names []string
		for _, p := range prompts {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, []string{"greet", "plain"}) {
			t.Fatalf("ListPrompts = %q, want greet, plain", names)
		}
		if n := len(b.received("prompts/list")); n != 2 {
			t.Errorf("server received %d prompts/list, want 2 (one per page)", n)
		}
		if a := prompts[0].Arguments; len(a) != 2 || a[0].Name != "name" || !a[0].Required || a[1].Required {
			t.Errorf("greet's arguments = %+v", a)
		}
		res, err := b.client.GetPrompt(ctx, "greet", map[string]string{"name": "Ada", "style": "a pirate"}, nil)
		if err != nil {
			t.Fatalf("GetPrompt: %v", err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != "Hello, Ada! (in the style of a pirate)" {
			t.Errorf("GetPrompt = %+v", res.Messages)
		}
		gets := b.received("prompts/get")
		var sent map[string]string
		if err := json.Unmarshal(field(t, gets[0].Params, "arguments"), &sent); err != nil || sent["name"] != "Ada" || sent["style"] != "a pirate" {
			t.Errorf("server received arguments %s", gets[0].Params)
		}
		if b.mode.http != nil && b.mode.version == mcp.Version20260728 {
			if got := gets[0].Header.Get("Mcp-Name"); got != "greet" {
				t.Errorf("Mcp-Name = %q, want greet", got)
			}
		}
	})
}

// A prompt the server refuses (unknown, or a required argument missing) is
// its *RPCError, and a prompt without arguments sends none.
func TestPrompts_Errors(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025, stdio2024, http2025JSON}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		for _, name := range []string{"nope", "greet"} {
			_, err := b.client.GetPrompt(ctx, name, nil, nil)
			if !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
				t.Errorf("GetPrompt(%s) = %v, want invalid params", name, err)
			}
		}
		res, err := b.client.GetPrompt(ctx, "plain", nil, nil)
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Role != "assistant" {
			t.Fatalf("GetPrompt(plain) = %+v, %v", res, err)
		}
		if args := field(t, b.received("prompts/get")[2].Params, "arguments"); args != nil {
			t.Errorf("plain: sent arguments %s", args)
		}
	})
}

// A cancelled prompts/get returns ErrCancelled before anything is sent.
func TestPrompts_PreCancelledSendsNothing(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.client.GetPrompt(ctx, "plain", nil, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("GetPrompt = %v, want ErrCancelled", err)
		}
		for _, err := range b.client.ListPrompts(ctx, nil) {
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("ListPrompts = %v, want ErrCancelled", err)
			}
		}
		if n := len(b.received("prompts/get")) + len(b.received("prompts/list")); n != 0 {
			t.Errorf("server received %d prompt requests, want 0", n)
		}
	})
}
