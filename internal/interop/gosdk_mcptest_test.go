package interop

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp/mcptest"
)

// TestGoSDKToMCPTest runs the go-sdk v1.8.0 client against andon's mcptest
// server in a subprocess over stdio: a client andon did not write accepts
// mcptest's handshake (server/discover on 2026-07-28, initialize on
// 2025-11-25), its tool list and its tool results, so mcptest is a faithful
// server to test andon's client against.
func TestGoSDKToMCPTest(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			cs := gosdkToMCPTest(t, rev)
			res := cs.InitializeResult()
			if res.ProtocolVersion != rev {
				t.Fatalf("negotiated %q, asked for %q", res.ProtocolVersion, rev)
			}
			if res.ServerInfo == nil || res.ServerInfo.Name != "mcptest" {
				t.Errorf("server info %+v, want mcptest", res.ServerInfo)
			}
			ctx := t.Context()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("listing tools: %v", err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"echo", "slow", "progress"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools %v lack %q", names, want)
				}
			}
			call, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, mcptest"}})
			if err != nil {
				t.Fatalf("calling echo: %v", err)
			}
			if call.IsError || len(call.Content) != 1 {
				t.Fatalf("echo returned %+v", call)
			}
			text, ok := call.Content[0].(*gosdk.TextContent)
			if !ok || text.Text != "hello, mcptest" {
				t.Errorf("echo returned content %#v, want the text back", call.Content[0])
			}
		})
	}
}

// TestGoSDKToMCPTestCancel cancels a go-sdk client's call to mcptest's slow
// tool: mcptest's handler must see go-sdk's notifications/cancelled (which
// carries no _meta, even on 2026-07-28), and the session must stay usable.
func TestGoSDKToMCPTestCancel(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "record")
			cs := gosdkToMCPTest(t, rev, mcptestRecordEnv+"="+record)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60000}})
				errc <- err
			}()
			started := waitRecord(t, record, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("go-sdk CallTool after cancel returned %v, want context.Canceled", err)
			}
			waitRecord(t, record, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.ID == started.ID })
			call, err := cs.CallTool(t.Context(), &gosdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
			if err != nil || call.IsError {
				t.Fatalf("echo after a cancel: %+v, %v", call, err)
			}
		})
	}
}

// waitRecord polls the records an mcptest subprocess writes to path until
// one matches, and returns it.
func waitRecord(t *testing.T, path string, match func(mcptest.Record) bool) mcptest.Record {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for {
		// A missing file or a half-written last line is read again later.
		recs, err := mcptest.ReadRecords(path)
		for _, r := range recs {
			if match(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching mcptest record within %v (read error: %v); records: %+v", pollDeadline, err, recs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
