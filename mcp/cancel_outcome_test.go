package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// TestCancelOutcome: after a cancel the client tells what became of the
// call: a result that came anyway, the server's exit, or nothing.
func TestCancelOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool string
		// after runs once the cancel is on the server's record.
		after func(srv *mcptest.Server)
		want  mcp.CancelOutcome
	}{
		{"a result after the cancel", "late", nil, mcp.CancelCompletedAnyway},
		{"nothing heard", "slow", nil, mcp.CancelUnconfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcptest.NewServer(nil)
			defer srv.Close()
			window := time.Hour // a test that ends by the window sets its own
			if tc.want == mcp.CancelUnconfirmed {
				window = 50 * time.Millisecond
			}
			c, err := mcp.Connect(t.Context(), srv.Transport(), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125, CancelOutcomeWindow: window})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			outcome := make(chan mcp.CancelOutcome, 2)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, tc.tool, map[string]any{"ms": 600000}, &mcp.CallOptions{OnCancelOutcome: func(o mcp.CancelOutcome) { outcome <- o }})
				errc <- err
			}()
			wctx, stop := context.WithTimeout(t.Context(), 30*time.Second)
			defer stop()
			if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted }); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-errc; !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("call: %v", err)
			}
			if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Method == "notifications/cancelled" }); err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(srv)
			}
			select {
			case got := <-outcome:
				if got != tc.want {
					t.Errorf("outcome %s, want %s", got, tc.want)
				}
			case <-wctx.Done():
				t.Fatal("no outcome")
			}
			select {
			case again := <-outcome:
				t.Errorf("told twice: then %s", again)
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

// TestCancelOutcomeConfirmedByExit: a stdio server whose stream ends
// after the cancel (its process exited) confirms the cancel.
func TestCancelOutcomeConfirmedByExit(t *testing.T) {
	client, server := net.Pipe()
	go func() { // a server that exits when told to cancel
		defer server.Close()
		sc := bufio.NewScanner(server)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal(sc.Bytes(), &m)
			switch m.Method {
			case "initialize":
				server.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"exits","version":"1"}}}` + "\n"))
			case "notifications/cancelled":
				return
			}
		}
	}()
	c, err := mcp.Connect(t.Context(), mcp.Stream(client), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125, CancelOutcomeWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outcome := make(chan mcp.CancelOutcome, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = c.CallTool(ctx, "work", nil, &mcp.CallOptions{OnCancelOutcome: func(o mcp.CancelOutcome) { outcome <- o }})
	if !errors.Is(err, mcp.ErrTimeout) {
		t.Fatalf("call: %v", err)
	}
	select {
	case got := <-outcome:
		if got != mcp.CancelConfirmed {
			t.Errorf("outcome %s, want confirmed", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome")
	}
}
