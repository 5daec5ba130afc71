package mcp_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// resourceModes cover both eras on a pipe, a subprocess, and HTTP with and
// without sessions (2026-07-28 is stateless; 2025 has sessions).
var resourceModes = []mode{inproc2026, inproc2025, inproc2024, stdio2026, stdio2025, http2026, http2026JSON, http2025, http2024}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		out = append(out, v)
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Resources are listed across pages (one request per page), templates
// likewise, and both kinds of contents read back as the server sent them.
func TestResources_ListPaginatesAndReadReturnsTextAndBlob(t *testing.T) {
	runWith(t, resourceModes, func(o *setupOpts) {
		o.server.PageSize = 1
		o.serverArgs = []string{"-page-size", "1"}
	}, func(t *testing.T, b *testBundle) {
		ctx := testCtx(t)
		var uris []string
		for _, r := range collect(t, b.client.ListResources(ctx, nil)) {
			uris = append(uris, r.URI)
		}
		want := []string{"mcptest://static/hello", "mcptest://static/bytes", "mcptest://static/readme"}
		if !slices.Equal(uris, want) {
			t.Errorf("ListResources = %q, want %q", uris, want)
		}
		if n := len(b.received("resources/list")); n != 3 {
			t.Errorf("server received %d resources/list, want 3 (one per page)", n)
		}
		var templates []string
		for _, rt := range collect(t, b.client.ResourceTemplates(ctx, nil)) {
			templates = append(templates, rt.URITemplate)
		}
		if want := []string{"mcptest://large/{bytes}", "mcptest://slow/{ms}", "mcptest://log/{level}"}; !slices.Equal(templates, want) {
			t.Errorf("ResourceTemplates = %q, want %q", templates, want)
		}

		res, err := b.client.ReadResource(ctx, "mcptest://static/hello", nil)
		if err != nil {
			t.Fatalf("ReadResource(hello): %v", err)
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != "hello from mcptest" || res.Contents[0].MIMEType != "text/plain" {
			t.Errorf("hello = %+v", res.Contents)
		}
		if b.mode.modernHTTP() {
			// 2026-07-28 routes resources/read by its URI.
			if got := b.received("resources/read")[0].Header.Get("Mcp-Name"); got != "mcptest://static/hello" {
				t.Errorf("Mcp-Name = %q, want the URI", got)
			}
		}
		res, err = b.client.ReadResource(ctx, "mcptest://static/bytes", nil)
		if err != nil {
			t.Fatalf("ReadResource(bytes): %v", err)
		}
		if len(res.Contents) != 1 || len(res.Contents[0].Blob) != 256 || res.Contents[0].Blob[255] != 255 || res.Contents[0].Text != "" {
			t.Errorf("bytes = %+v", res.Contents)
		}
	})
}

// Ranging stops early: a caller that breaks after the first resource costs
// the server one page's request, not the whole listing.
func TestResources_BreakingStopsFetching(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2025}, func(o *setupOpts) { o.server.PageSize = 1 }, func(t *testing.T, b *testBundle) {
		for _, err := range b.client.ListResources(testCtx(t), nil) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if n := len(b.received("resources/list")); n != 1 {
			t.Errorf("server received %d resources/list, want 1", n)
		}
	})
}

// A listing stops at MaxPages with an error instead of following a server's
// cursors for ever.
func TestResources_ListStopsAtMaxPages(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2024}, func(o *setupOpts) {
		o.server.PageSize = 1
		o.client.MaxPages = 2
	}, func(t *testing.T, b *testBundle) {
		var got int
		var err error
		for _, e := range b.client.ListResources(testCtx(t), nil) {
			if e != nil {
				err = e
				break
			}
			got++
		}
		if err == nil || got != 2 {
			t.Fatalf("ListResources = %d resources, err %v; want 2 and an error past MaxPages", got, err)
		}
		if n := len(b.received("resources/list")); n != 2 {
			t.Errorf("server received %d resources/list, want 2", n)
		}
	})
}

// An unknown resource is ErrResourceNotFound on every revision, with the
// server's own error (-32002 before 2026-07-28, -32602 on it) inside.
func TestResources_UnknownIsNotFound(t *testing.T) {
	run(t, resourceModes, func(t *testing.T, b *testBundle) {
		_, err := b.client.ReadResource(testCtx(t), "mcptest://nothing/here", nil)
		if !errors.Is(err, mcp.ErrResourceNotFound) {
			t.Fatalf("ReadResource = %v, want ErrResourceNotFound", err)
		}
		var rpc *mcp.RPCError
		if !errors.As(err, &rpc) {
			t.Fatalf("ReadResource = %v, want an *RPCError inside", err)
		}
		want := int64(-32002)
		if b.mode.version == mcp.Version20260728 {
			want = mcp.CodeInvalidParams
		}
		if rpc.Code != want {
			t.Errorf("code = %d, want %d", rpc.Code, want)
		}
		// The connection is fine afterwards.
		if _, err := b.client.ReadResource(testCtx(t), "mcptest://static/hello", nil); err != nil {
			t.Errorf("ReadResource after not-found: %v", err)
		}
	})
}

// Contents past MaxResourceSize are ErrResourceTooLarge; contents at the
// cap are returned.
func TestResources_SizeCap(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2025, http2025}, func(o *setupOpts) { o.client.MaxResourceSize = 1000 }, func(t *testing.T, b *testBundle) {
		if _, err := b.client.ReadResource(testCtx(t), "mcptest://large/1001", nil); !errors.Is(err, mcp.ErrResourceTooLarge) {
			t.Errorf("1001 bytes: ReadResource = %v, want ErrResourceTooLarge", err)
		}
		res, err := b.client.ReadResource(testCtx(t), "mcptest://large/1000", nil)
		if err != nil || len(res.Contents) != 1 || len(res.Contents[0].Text) != 1000 {
			t.Errorf("1000 bytes: ReadResource = %v, %v; want the contents", res, err)
		}
	})
}

// A cancelled resources/read is abandoned on the wire as a tool call is:
// the caller gets ErrCancelled, the server is told (notifications/cancelled,
// or on 2026-07-28 HTTP its response stream closes) and its read stops.
func TestResources_CancelledReadIsCancelledOnTheWire(t *testing.T) {
	run(t, resourceModes, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				for _, r := range b.records() {
					if r.Kind == mcptest.ReadStarted {
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
		_, err := b.client.ReadResource(ctx, "mcptest://slow/30000", nil)
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("ReadResource = %v, want ErrCancelled", err)
		}
		b.waitFor("the read's cancellation", func(r mcptest.Record) bool {
			return r.Kind == mcptest.ReadCancelled && r.URI == "mcptest://slow/30000"
		})
		reads := b.received("resources/read")
		if len(reads) != 1 {
			t.Fatalf("server received %d resources/read, want 1", len(reads))
		}
		b.assertRequestCancelledOnTheWire("resources/read", reads[0].ID)
	})
}

// A read's Timeout is a cancellation too: ErrTimeout, and the server is told.
func TestResources_ReadTimeoutIsCancelledOnTheWire(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025, stdio2025, http2025}, func(t *testing.T, b *testBundle) {
		_, err := b.client.ReadResource(context.Background(), "mcptest://slow/30000", &mcp.CallOptions{Timeout: 50 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReadResource = %v, want ErrTimeout", err)
		}
		b.waitFor("the read's cancellation", func(r mcptest.Record) bool { return r.Kind == mcptest.ReadCancelled })
		b.assertRequestCancelledOnTheWire("resources/read", b.received("resources/read")[0].ID)
	})
}
