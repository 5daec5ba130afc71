package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A read whose server answers after the read was cancelled: the caller has
// ErrCancelled, the late contents are dropped — never returned to the next
// read — and the connection goes on.
func TestResources_LateReplyToACancelledReadIsDropped(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025, stdio2026, stdio2024, http2025, http2024}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				for _, r := range b.records() {
					if r.Kind == mcptest.ReadStarted && r.URI == "mcptest://late/30000" {
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if _, err := b.client.ReadResource(ctx, "mcptest://late/30000", nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("ReadResource = %v, want ErrCancelled", err)
		}
		b.waitFor("the late reply", func(r mcptest.Record) bool { return r.Kind == mcptest.LateReply })
		res, err := b.client.ReadResource(testCtx(t), "mcptest://static/hello", nil)
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hello from mcptest" {
			t.Fatalf("the next read = %+v, %v; want its own contents", res, err)
		}
	})
}

// A blob that is not base64 is a ProtocolError for that read, not for the
// connection.
func TestResources_MalformedBlobIsAProtocolError(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025, http2025}, func(t *testing.T, b *testBundle) {
		_, err := b.client.ReadResource(testCtx(t), "mcptest://bad/blob", nil)
		var pe *mcp.ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("ReadResource = %v, want a ProtocolError", err)
		}
		if _, err := b.client.ReadResource(testCtx(t), "mcptest://static/hello", nil); err != nil {
			t.Errorf("ReadResource after the malformed blob: %v", err)
		}
	})
}
