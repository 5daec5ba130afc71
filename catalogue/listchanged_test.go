package catalogue_test

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// toolNames lists the catalogue's tools, by local name.
func toolNames(t *testing.T, cat *catalogue.Catalogue) []string {
	t.Helper()
	tools, err := cat.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Spec().Name)
	}
	slices.Sort(names)
	return names
}

// waitChange waits for the server's tools to have changed (the deadline
// only keeps a broken test from hanging).
func waitChange(t *testing.T, cat *catalogue.Catalogue) *catalogue.ToolsChange {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ch := cat.Servers()[0].Change; ch != nil {
			return ch
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the catalogue never saw the server's tools change")
	return nil
}

func noArgs(context.Context, *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
	return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "ok"}}}, nil
}

var emptyObject = map[string]any{"type": "object"}

// A go-sdk server adds and removes tools while andon runs; it sends
// notifications/tools/list_changed, and the catalogue imports its tools
// again: the next listing offers the new set, and the server's info says
// when, why and which tools came and went.
func TestListChangedReimports(t *testing.T) {
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "changing", Version: "1"}, nil)
	srv.AddTool(&gosdk.Tool{Name: "first", InputSchema: emptyObject}, noArgs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dial := func(context.Context, catalogue.Server) (mcp.Transport, error) {
		client, server := net.Pipe()
		go func() {
			ss, err := srv.Connect(ctx, &gosdk.IOTransport{Reader: server, Writer: server}, nil)
			if err == nil {
				ss.Wait()
			}
			server.Close()
		}()
		return mcp.Stream(client), nil
	}
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "s", Command: stdio, Protocol: "2025-11-25"}}},
		&catalogue.Options{Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if got := toolNames(t, cat); !slices.Equal(got, []string{"mcp_s_first"}) {
		t.Fatalf("tools = %v", got)
	}
	if ch := cat.Servers()[0].Change; ch != nil {
		t.Fatalf("a change before any: %+v", ch)
	}
	srv.AddTool(&gosdk.Tool{Name: "second", InputSchema: emptyObject}, noArgs)
	srv.RemoveTools("first")
	waitChange(t, cat)
	// go-sdk may notify once per change: the catalogue may have seen the
	// add before the removal. Wait for the final set.
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(toolNames(t, cat), []string{"mcp_s_second"}) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := toolNames(t, cat); !slices.Equal(got, []string{"mcp_s_second"}) {
		t.Fatalf("tools after the change = %v, want mcp_s_second only", got)
	}
	ch := cat.Servers()[0].Change
	// The last change is the one that removed first (with second added,
	// if go-sdk said it all at once).
	if ch.Why != "list_changed" || ch.At.IsZero() || !slices.Equal(ch.Removed, []string{"first"}) {
		t.Fatalf("change = %+v", ch)
	}
	if info := cat.Servers()[0]; info.Tools != 1 || info.Error != "" {
		t.Fatalf("server info = %+v", info)
	}
}

// A call to a tool the server no longer has (it changed its tools without
// saying so) fails, and makes the catalogue import the server's tools
// again: the tool is gone from the next listing, and the change is noted.
func TestUnknownToolReimports(t *testing.T) {
	before := mcptest.NewServer(&mcptest.Options{Elicit: true}) // offers elicit
	after := mcptest.NewServer(nil)                             // does not
	defer before.Close()
	defer after.Close()
	var dials atomic.Int32
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "s", Command: stdio, RequiresApproval: ptr(false)}}},
		&catalogue.Options{Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) {
			if dials.Add(1) == 1 {
				return before.Transport(), nil
			}
			return after.Transport(), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if !slices.Contains(toolNames(t, cat), "mcp_s_elicit") {
		t.Fatal("the first server's elicit tool is not offered")
	}
	// The connection ends; the next call reconnects, to a server without
	// the tool.
	crash, err := cat.Tool(context.Background(), "mcp_s_crash")
	if err != nil || crash == nil {
		t.Fatalf("Tool(mcp_s_crash) = %v, %v", crash, err)
	}
	crash.Call(context.Background(), nil)
	elicit, err := cat.Tool(context.Background(), "mcp_s_elicit")
	if err != nil || elicit == nil {
		t.Fatalf("Tool(mcp_s_elicit) = %v, %v", elicit, err)
	}
	res, err := elicit.Call(context.Background(), nil)
	if err == nil && res.Outcome == agent.OutcomeOK {
		t.Fatalf("a call to a tool the server lost succeeded: %+v", res)
	}
	ch := waitChange(t, cat)
	if ch.Why != "unknown_tool" || !slices.Equal(ch.Removed, []string{"elicit"}) || len(ch.Added) != 0 {
		t.Fatalf("change = %+v, want elicit removed because of an unknown tool", ch)
	}
	if slices.Contains(toolNames(t, cat), "mcp_s_elicit") {
		t.Fatal("the lost tool is still offered")
	}
}
