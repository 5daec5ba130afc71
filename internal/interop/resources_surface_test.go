package interop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// andon's resources, prompts, completion and logging against go-sdk and
// mcp-go servers, over stdio framing and HTTP, on both eras.
func TestSurface_ResourcesPromptsCompletionAgainstPeers(t *testing.T) {
	for _, p := range surfacePeers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := connectSurface(t, p, mcp.ClientOptions{})
			ctx := t.Context()
			var uris []string
			for r, err := range b.client.ListResources(ctx, nil) {
				if err != nil {
					t.Fatalf("ListResources: %v", err)
				}
				uris = append(uris, r.URI)
			}
			slices.Sort(uris)
			if want := []string{"surface://bytes", "surface://hello", "surface://log"}; !slices.Equal(uris, want) {
				t.Errorf("resources %q, want %q", uris, want)
			}
			var templates []string
			for rt, err := range b.client.ResourceTemplates(ctx, nil) {
				if err != nil {
					t.Fatalf("ResourceTemplates: %v", err)
				}
				templates = append(templates, rt.URITemplate)
			}
			if want := []string{surfaceSlowPrefix + "{tag}"}; !slices.Equal(templates, want) {
				t.Errorf("templates %q, want %q", templates, want)
			}

			res, err := b.client.ReadResource(ctx, "surface://hello", nil)
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hello from "+p.library {
				t.Errorf("read hello = %+v, %v", res, err)
			}
			res, err = b.client.ReadResource(ctx, "surface://bytes", nil)
			if err != nil || len(res.Contents) != 1 || string(res.Contents[0].Blob) != "\x00\x01\x02\xff" {
				t.Errorf("read bytes = %+v, %v", res, err)
			}
			if _, err := b.client.ReadResource(ctx, "surface://nothing", nil); !errors.Is(err, mcp.ErrResourceNotFound) {
				t.Errorf("read of an unknown resource = %v, want ErrResourceNotFound", err)
			}

			var prompts []mcp.Prompt
			for pr, err := range b.client.ListPrompts(ctx, nil) {
				if err != nil {
					t.Fatalf("ListPrompts: %v", err)
				}
				prompts = append(prompts, pr)
			}
			if len(prompts) != 1 || prompts[0].Name != "greet" || len(prompts[0].Arguments) != 2 || !prompts[0].Arguments[0].Required {
				t.Errorf("prompts %+v", prompts)
			}
			got, err := b.client.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"}, nil)
			if err != nil || len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content.Text != "Hello, Ada!" {
				t.Errorf("GetPrompt = %+v, %v", got, err)
			}

			comp, err := b.client.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("greet"), Argument: "style", Value: "a p"}, nil)
			if err != nil || !slices.Equal(comp.Values, []string{"a pirate", "a poet"}) {
				t.Errorf("Complete = %+v, %v", comp, err)
			}

			// Log messages: logging/setLevel on the handshake era, the
			// level in each request's _meta on 2026-07-28.
			if err := b.client.SetLoggingLevel(ctx, "info", nil); err != nil {
				t.Fatalf("SetLoggingLevel: %v", err)
			}
			// A message on a request's own stream is logged before the
			// request returns. mcp-go v1.2.1's Streamable HTTP server now
			// and then drops a notification sent during a handler that
			// returns at once (its SSE response then holds only the
			// result), so the read is repeated until the server has sent
			// one; none in 20 is a failure.
			logged := func() bool {
				l := b.logs.String()
				return strings.Contains(l, `msg="mcp: server log"`) && strings.Contains(l, "server=surface-") && strings.Contains(l, `data="\"a warning\""`)
			}
			for range 20 {
				if _, err := b.client.ReadResource(ctx, "surface://log", nil); err != nil {
					t.Fatalf("read log: %v", err)
				}
				if logged() {
					break
				}
			}
			if !logged() {
				dump := b.logs.String()
				if b.wire != nil {
					reads := b.wire.posts("resources/read")
					dump += "\nwire:\n" + b.wire.String() + "\nthe last read's response:\n" + string(reads[len(reads)-1].response())
				}
				t.Errorf("no server log message in 20 reads of surface://log:\n%s", dump)
			}
		})
	}
}

// A cancelled resources/read of a slow resource is abandoned on the wire:
// the peer's handler sees its context end. Over 2026-07-28 HTTP nothing is
// sent (the closed response stream is the signal); with sessions exactly
// one notifications/cancelled names the read. The connection goes on.
func TestSurface_CancelledReadStopsThePeersHandler(t *testing.T) {
	for _, p := range surfacePeers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := connectSurface(t, p, mcp.ClientOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			cancelWhenReported(b.events, evStarted, "read1", cancel)
			_, err := b.client.ReadResource(ctx, surfaceSlowPrefix+"read1", nil)
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("ReadResource = %v, want ErrCancelled", err)
			}
			b.events.wait(t, evCancelled, "read1")
			if b.wire != nil {
				notices := len(b.wire.posts("notifications/cancelled"))
				want := 1
				if p.revision == mcp.Version20260728 {
					want = 0
				}
				if notices != want {
					t.Errorf("%d notifications/cancelled POSTed, want %d:\n%s", notices, want, b.wire)
				}
			}
			if res, err := b.client.ReadResource(t.Context(), "surface://hello", nil); err != nil || res.Contents[0].Text != "hello from "+p.library {
				t.Errorf("read after the cancel = %+v, %v", res, err)
			}
		})
	}
}

// On 2026-07-28 andon's Listen stream hears a go-sdk or mcp-go server's
// tool list change, and cancelling it closes the stream: over HTTP with no
// notifications/cancelled POSTed.
func TestSurface_ListenAgainstPeers(t *testing.T) {
	for _, p := range surfacePeers {
		if p.revision != mcp.Version20260728 {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			changed := make(chan string, 4)
			b := connectSurface(t, p, mcp.ClientOptions{OnListChanged: func(list string) { changed <- list }})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			acked, done := make(chan mcp.SubscriptionFilter, 1), make(chan error, 1)
			go func() {
				done <- b.client.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(f mcp.SubscriptionFilter) { acked <- f })
			}()
			select {
			case f := <-acked:
				if !f.ToolsListChanged {
					t.Errorf("acknowledged %+v", f)
				}
			case err := <-done:
				t.Fatalf("Listen ended before its acknowledgment: %v", err)
			case <-time.After(pollDeadline):
				t.Fatal("no acknowledgment")
			}
			b.addTool("added")
			select {
			case list := <-changed:
				if list != "tools" {
					t.Errorf("OnListChanged(%q), want tools", list)
				}
			case <-time.After(pollDeadline):
				t.Fatal("the tool list change never came")
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, mcp.ErrCancelled) {
					t.Errorf("Listen = %v, want ErrCancelled", err)
				}
			case <-time.After(pollDeadline):
				t.Fatal("Listen did not return after its cancel")
			}
			if b.wire != nil {
				if n := len(b.wire.posts("notifications/cancelled")); n != 0 {
					t.Errorf("%d notifications/cancelled POSTed on 2026-07-28:\n%s", n, b.wire)
				}
			}
		})
	}
}
