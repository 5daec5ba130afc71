package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// surfaceRequest is one method of the client's surface beyond tools, made
// the way a caller makes it.
type surfaceRequest struct {
	method string
	// handshakeOnly: the method exists up to 2025-11-25 only (on 2026-07-28
	// it fails with ErrUnsupported without sending anything).
	handshakeOnly bool
	do            func(ctx context.Context, c *mcp.Client, opts *mcp.CallOptions) error
}

// firstErr ranges over a listing and returns its error, if any.
func firstErr[T any](seq func(func(T, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

var surfaceRequests = []surfaceRequest{
	{"resources/list", false, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return firstErr(c.ListResources(ctx, o))
	}},
	{"resources/templates/list", false, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return firstErr(c.ResourceTemplates(ctx, o))
	}},
	{"prompts/list", false, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return firstErr(c.ListPrompts(ctx, o))
	}},
	{"prompts/get", false, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		_, err := c.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"}, o)
		return err
	}},
	{"completion/complete", false, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		_, err := c.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("greet"), Argument: "style"}, o)
		return err
	}},
	{"logging/setLevel", true, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return c.SetLoggingLevel(ctx, "info", o)
	}},
	{"resources/subscribe", true, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return c.Subscribe(ctx, "mcptest://static/hello", o)
	}},
	{"resources/unsubscribe", true, func(ctx context.Context, c *mcp.Client, o *mcp.CallOptions) error {
		return c.Unsubscribe(ctx, "mcptest://static/hello", o)
	}},
}

// Every method of the surface beyond tools is stopped as a tool call is, on
// every transport and revision that has it: a request the server holds is
// cancelled by its context (ErrCancelled) or its Timeout (ErrTimeout), the
// server is told as the transport and revision require (DESIGN.md,
// invariant 3), and the connection goes on serving.
func TestSurface_EveryMethodIsCancelledOnTheWire(t *testing.T) {
	for _, req := range surfaceRequests {
		t.Run(req.method, func(t *testing.T) {
			t.Parallel()
			modes := allModes
			if req.handshakeOnly {
				modes = []mode{inproc2025, inproc2024, stdio2025, stdio2024, http2025, http2025JSON, http2024}
			}
			runWith(t, modes, func(o *setupOpts) {
				o.server.Stall = []string{req.method}
				o.serverArgs = []string{"-stall", req.method}
			}, func(t *testing.T, b *testBundle) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					defer cancel()
					deadline := time.Now().Add(10 * time.Second)
					for time.Now().Before(deadline) {
						for _, r := range b.records() {
							if r.Kind == mcptest.Received && r.Method == req.method {
								return
							}
						}
						time.Sleep(time.Millisecond)
					}
				}()
				err := req.do(ctx, b.client, nil)
				if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
					t.Fatalf("%s = %v, want ErrCancelled", req.method, err)
				}
				held := b.received(req.method)
				if len(held) != 1 {
					t.Fatalf("server received %d %s, want 1", len(held), req.method)
				}
				b.assertRequestCancelledOnTheWire(req.method, held[0].ID)
				if _, err := b.client.ReadResource(testCtx(t), "mcptest://static/hello", nil); err != nil {
					t.Errorf("ReadResource after the cancel: %v", err)
				}
			})
		})
	}
}

// A Timeout on any of these methods is ErrTimeout, and a cancellation on
// the wire too.
func TestSurface_EveryMethodTimesOutOnTheWire(t *testing.T) {
	for _, req := range surfaceRequests {
		t.Run(req.method, func(t *testing.T) {
			t.Parallel()
			modes := []mode{inproc2026, stdio2026, http2026}
			if req.handshakeOnly {
				modes = []mode{inproc2025, stdio2025, http2025}
			}
			runWith(t, modes, func(o *setupOpts) {
				o.server.Stall = []string{req.method}
				o.serverArgs = []string{"-stall", req.method}
			}, func(t *testing.T, b *testBundle) {
				// Long enough for the request to reach a server on a loaded
				// machine; nothing here measures how long anything took.
				err := req.do(context.Background(), b.client, &mcp.CallOptions{Timeout: 500 * time.Millisecond})
				if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s = %v, want ErrTimeout", req.method, err)
				}
				b.waitFor(req.method, isReceived(req.method))
				b.assertRequestCancelledOnTheWire(req.method, b.received(req.method)[0].ID)
			})
		})
	}
}

// On 2026-07-28 the handshake-era methods send nothing: subscribe and
// unsubscribe fail with ErrUnsupported, and SetLoggingLevel sets the
// logLevel later requests carry (TestSetLoggingLevelAndServerLogMessages).
func TestSurface_HandshakeOnlyMethodsSendNothingOn2026(t *testing.T) {
	for _, req := range surfaceRequests {
		if !req.handshakeOnly {
			continue
		}
		t.Run(req.method, func(t *testing.T) {
			t.Parallel()
			run(t, []mode{inproc2026, http2026}, func(t *testing.T, b *testBundle) {
				err := req.do(testCtx(t), b.client, nil)
				if req.method == "logging/setLevel" {
					if err != nil {
						t.Fatalf("%s = %v, want nil", req.method, err)
					}
				} else if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("%s = %v, want ErrUnsupported", req.method, err)
				}
				if n := len(b.received(req.method)); n != 0 {
					t.Errorf("server received %d %s", n, req.method)
				}
			})
		})
	}
}
