package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

func TestNegotiation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		server  mcptest.Options
		client  mcp.ClientOptions
		want    string // negotiated revision
		wantErr error
	}{
		{name: "default prefers 2026-07-28", want: mcp.Version20260728},
		{name: "falls back to newest handshake-era revision",
			server: mcptest.Options{Versions: []string{mcp.Version20251125, mcp.Version20250618}}, want: mcp.Version20251125},
		{name: "falls back to what the server lists",
			server: mcptest.Options{Versions: []string{mcp.Version20250326}}, want: mcp.Version20250326},
		{name: "silent discover means handshake era",
			server: mcptest.Options{SilentDiscover: true, Versions: []string{mcp.Version20241105}},
			client: mcp.ClientOptions{DiscoverTimeout: 50 * time.Millisecond}, want: mcp.Version20241105},
		{name: "retries discover once when refused with a list holding 2026-07-28",
			server: mcptest.Options{RefuseFirstDiscover: true}, want: mcp.Version20260728},
		{name: "pinned handshake-era revision",
			client: mcp.ClientOptions{ProtocolVersion: mcp.Version20250618}, want: mcp.Version20250618},
		{name: "pinned 2026-07-28 on a handshake-era server",
			server: mcptest.Options{Versions: []string{mcp.Version20251125}},
			client: mcp.ClientOptions{ProtocolVersion: mcp.Version20260728}, wantErr: mcp.ErrUnsupportedVersion},
		{name: "pinned revision the server does not speak",
			server: mcptest.Options{Versions: []string{mcp.Version20251125}},
			client: mcp.ClientOptions{ProtocolVersion: mcp.Version20241105}, wantErr: mcp.ErrUnsupportedVersion},
		{name: "pinned revision andon does not speak",
			client: mcp.ClientOptions{ProtocolVersion: "2099-01-01"}, wantErr: mcp.ErrUnsupportedVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mcptest.NewServer(&tt.server)
			t.Cleanup(s.Close)
			c, err := mcp.Connect(context.Background(), s.Transport(), &tt.client)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Connect = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer c.Close()
			if got := c.ProtocolVersion(); got != tt.want {
				t.Errorf("negotiated %s, want %s", got, tt.want)
			}
			if c.Server().Implementation.Name != "mcptest" {
				t.Errorf("server info = %+v", c.Server())
			}
			if res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "ok"}, nil); err != nil || res.Text() != "ok" {
				t.Errorf("CallTool = %v, %v", res, err)
			}
			// The handshake requests are never cancelled by notification,
			// even when the discover probe timed out.
			if n := len(s.ReceivedMessages("notifications/cancelled")); n != 0 {
				t.Errorf("server received %d notifications/cancelled during the handshake", n)
			}
		})
	}
}

// Case 26: a handshake abandoned by the caller's context is never cancelled
// by notification: the connection attempt is closed instead, and a
// subprocess that ignores everything is stopped.
func TestCase26_HandshakeIsAbandonedNotCancelled(t *testing.T) {
	t.Parallel()
	// "sleep" reads nothing and answers nothing: the handshake can only
	// end by the caller's deadline.
	cmd := mcp.Command("sleep", "60")
	cmd.TerminateGrace = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := mcp.Connect(ctx, cmd, &mcp.ClientOptions{DiscoverTimeout: time.Hour})
	if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect = %v, want ErrTimeout", err)
	}

	// Against a recording server: a handshake-era server that ignores the
	// probe, and a caller who gives up during initialize.
	s := mcptest.NewServer(&mcptest.Options{SilentDiscover: true})
	t.Cleanup(s.Close)
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		s.WaitFor(context.Background(), func(r mcptest.Record) bool { return r.Method == "server/discover" })
		cancel2()
	}()
	if _, err := mcp.Connect(ctx2, s.Transport(), nil); !errors.Is(err, mcp.ErrCancelled) {
		t.Fatalf("Connect = %v, want ErrCancelled", err)
	}
	if n := len(s.ReceivedMessages("notifications/cancelled")); n != 0 {
		t.Errorf("server received %d notifications/cancelled for the handshake", n)
	}
}

func TestListToolsFollowsPages(t *testing.T) {
	runWith(t, []mode{inproc2026, inproc2025, stdio2024}, func(o *setupOpts) {
		o.server.PageSize = 3
		o.server.InvalidTool = true
		o.serverArgs = []string{"-page-size", "3", "-invalid-tool"}
	}, func(t *testing.T, b *testBundle) {
		tools, err := b.client.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// mcptest offers 16 tools with -invalid-tool; on 2026-07-28 the one
		// with an invalid x-mcp-header (bad_header) is left out.
		want := 16
		if b.mode.version == mcp.Version20260728 {
			want = 15
		}
		if len(tools) != want || tools[0].Name != "echo" {
			t.Fatalf("ListTools returned %d tools (first %q), want %d starting with echo", len(tools), tools[0].Name, want)
		}
		if tools[0].Annotations == nil || tools[0].Annotations.ReadOnlyHint == nil || !*tools[0].Annotations.ReadOnlyHint {
			t.Errorf("echo annotations = %+v, want readOnlyHint", tools[0].Annotations)
		}
		if n := len(b.received("tools/list")); n != 6 {
			t.Errorf("server received %d tools/list, want 6 pages", n)
		}
	})
	runWith(t, []mode{inproc2026}, func(o *setupOpts) {
		o.server.PageSize = 1
		o.client.MaxPages = 3
	}, func(t *testing.T, b *testBundle) {
		if _, err := b.client.ListTools(context.Background(), nil); err == nil {
			t.Fatal("ListTools past MaxPages succeeded")
		}
	})
}

func TestPing(t *testing.T) {
	run(t, []mode{inproc2025, stdio2024}, func(t *testing.T, b *testBundle) {
		if err := b.client.Ping(context.Background(), nil); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	run(t, []mode{inproc2026}, func(t *testing.T, b *testBundle) {
		if err := b.client.Ping(context.Background(), nil); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("Ping on 2026-07-28 = %v, want ErrUnsupported", err)
		}
		if n := len(b.received("ping")); n != 0 {
			t.Errorf("server received %d pings", n)
		}
	})
}

// Requests the server makes of the client are answered: by a handler
// (roots) or with method-not-found, never left hanging; on 2026-07-28 the
// same question arrives as an input_required result and the client retries
// with a new id, echoing requestState.
func TestServerRequestsAreAnswered(t *testing.T) {
	roots := []mcp.Root{{URI: "file:///work", Name: "work"}}
	runWith(t, []mode{inproc2026, inproc2025, stdio2026, stdio2024}, func(o *setupOpts) {
		o.client.Roots = roots
	}, func(t *testing.T, b *testBundle) {
		res := b.mustCall("ask", nil)
		if res.IsError || res.Text() != `roots: {"roots":[{"uri":"file:///work","name":"work"}]}` {
			t.Fatalf("ask = %q (isError %v)", res.Text(), res.IsError)
		}
		calls := b.received("tools/call")
		if b.mode.version == mcp.Version20260728 {
			if len(calls) != 2 || calls[0].ID == calls[1].ID {
				t.Fatalf("want two rounds with distinct ids, got %s", formatRecords(calls))
			}
			if got := string(field(t, calls[1].Params, "requestState")); got != `"mcptest-state-1"` {
				t.Errorf("retry requestState = %s", got)
			}
		}
	})
	run(t, []mode{inproc2025}, func(t *testing.T, b *testBundle) {
		res := b.mustCall("ask", nil)
		if !res.IsError || res.Text() != "roots/list failed: method not found: roots/list" {
			t.Fatalf("ask without roots = %q (isError %v), want method not found", res.Text(), res.IsError)
		}
	})
	run(t, []mode{inproc2026}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "ask", nil, nil)
		var pe *mcp.ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("ask without roots on 2026-07-28 = %v, want a ProtocolError", err)
		}
	})
}
