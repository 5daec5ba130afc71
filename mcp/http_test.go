package mcp_test

// HTTP-only behaviour, and the HTTP cases (C and D) of section 4 of
// calltool-cancellation-origin.md, each on the revision families they
// apply to. The cases shared with stdio run over HTTP too, in
// cancel_test.go.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The handshake-era HTTP revisions, each with sessions, SSE responses.
var sessionModes = []mode{
	{name: "http/2025-03-26", version: mcp.Version20250326, http: &mcptest.HTTPOptions{}},
	{name: "http/2025-06-18", version: mcp.Version20250618, http: &mcptest.HTTPOptions{}},
	http2025,
}

// Case 11: cancelling a handshake-era call during its event stream closes
// the stream and POSTs one notifications/cancelled, with no id, naming the
// call, in the call's session; the next call works.
func TestCase11_LegacyHTTPCancelDuringStream(t *testing.T) {
	run(t, append(sessionModes, http2024), func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{
			OnProgress: func(mcp.Progress) { cancel() }, // after the first event of the stream
		})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("CallTool = %v, want ErrCancelled", err)
		}
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
		note := b.received("notifications/cancelled")[0]
		if strings.Contains(string(note.Raw), `"id"`) {
			t.Errorf("the notification carries an id: %s", note.Raw)
		}
		b.waitFor("the handler's cancellation", isTool(mcptest.ToolCancelled, "slow"))
		b.mustCall("echo", map[string]any{"text": "next"})
	})
}

// Cases 12 and 13: a JSON response, and a server that holds back its
// response headers. Go can abandon the wait for headers, so the call
// returns at once and the server sees the request go away.
func TestCase12_LegacyHTTPCancelWhileWaitingForJSON(t *testing.T) {
	run(t, []mode{http2025JSON, {name: "http/2025-11-25/json", version: mcp.Version20251125, http: &mcptest.HTTPOptions{JSONResponse: true}}}, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		b.cancelWhenStarted("slow", 1, cancel)
		if _, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("CallTool = %v, want ErrCancelled", err)
		}
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
		b.mustCall("echo", map[string]any{"text": "next"})
	})
}

func TestCase13_CancelWhileWaitingForHeaders(t *testing.T) {
	runWith(t, []mode{http2026, http2025, http2025JSON}, func(o *setupOpts) {
		o.http = func(h *mcptest.HTTPOptions) { h.HeaderDelay = time.Hour }
	}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "echo", nil, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("CallTool = %v, want ErrTimeout", err)
		}
		b.assertCancelledOnTheWire(b.toolCallIDs()[0])
	})
}

// Cases 14 and 15: the reply to a notifications/cancelled POST is
// discarded unread, and its failure — a refusal, an expired-looking 404, a
// server error, or a reply that never comes — is logged once and changes
// nothing: the caller keeps its own error and the session serves on.
func TestCase15_FailedCancellationPostIsHarmless(t *testing.T) {
	for _, tt := range []struct {
		name   string
		adjust func(*mcptest.HTTPOptions)
		warns  bool
	}{
		{"400", func(h *mcptest.HTTPOptions) { h.RejectCancel = http.StatusBadRequest; h.CancelAnyway = true }, true},
		{"404", func(h *mcptest.HTTPOptions) { h.RejectCancel = http.StatusNotFound }, true},
		{"500", func(h *mcptest.HTTPOptions) { h.RejectCancel = http.StatusInternalServerError }, true},
		{"hanging reply", func(h *mcptest.HTTPOptions) { h.CancelReplyDelay = time.Hour }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runWith(t, []mode{http2025, http2024}, func(o *setupOpts) { o.http = tt.adjust }, func(t *testing.T, b *testBundle) {
				ctx, cancel := context.WithCancel(context.Background())
				b.cancelWhenStarted("slow", 1, cancel)
				_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil)
				if !errors.Is(err, mcp.ErrCancelled) || strings.Contains(err.Error(), "HTTP") {
					t.Fatalf("CallTool = %v, want the original ErrCancelled", err)
				}
				b.waitFor("notifications/cancelled", isReceived("notifications/cancelled"))
				// The session serves on, even while a reply still hangs.
				b.mustCall("echo", map[string]any{"text": "next"})
				calls := b.received("tools/call")
				if calls[0].Session != calls[1].Session {
					t.Errorf("the session changed: %q then %q", calls[0].Session, calls[1].Session)
				}
				if !tt.warns {
					return
				}
				deadline := time.Now().Add(10 * time.Second)
				for len(b.logs.lines("level=WARN", "cancellation notification")) == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if warns := b.logs.lines("level=WARN"); len(warns) != 1 || !strings.Contains(warns[0], "request_id=") {
					t.Errorf("want exactly one warning naming the request, got:\n%s", strings.Join(warns, "\n"))
				}
			})
		})
	}
}

// Cases 16, 17 and 18: on 2026-07-28 HTTP a call is cancelled by closing its
// response stream alone — whether the call was cancelled or timed out, and
// whether the server answers with a stream or JSON. No notification POST is
// ever made; the server's handler sees the disconnect.
func TestCase16_ModernHTTPClosesTheStreamAndSendsNothing(t *testing.T) {
	for _, how := range []string{"cancel", "deadline"} {
		t.Run(how, func(t *testing.T) {
			run(t, []mode{http2026, http2026JSON}, func(t *testing.T, b *testBundle) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var opts *mcp.CallOptions
				want := mcp.ErrCancelled
				if how == "cancel" {
					b.cancelWhenStarted("slow", 1, cancel)
				} else {
					opts, want = &mcp.CallOptions{Timeout: 50 * time.Millisecond}, mcp.ErrTimeout
				}
				if _, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, opts); !errors.Is(err, want) {
					t.Fatalf("CallTool = %v, want %v", err, want)
				}
				b.waitFor("the handler's cancellation", isTool(mcptest.ToolCancelled, "slow"))
				b.assertCancelledOnTheWire(b.toolCallIDs()[0])
				b.mustCall("echo", map[string]any{"text": "next"})
				for _, r := range b.records() {
					if r.Kind == mcptest.Received && r.Method != "server/discover" && r.Method != "tools/call" {
						t.Errorf("unexpected message over 2026-07-28 HTTP: %s", r.Raw)
					}
				}
			})
		})
	}
}

// Case 19: a multi-round-trip request. The deadline counts from the first
// round, not from each; a cancel covers the round in flight, and no further
// round is sent. Over HTTP and stdio alike.
func TestCase19_MultiRoundTripRequests(t *testing.T) {
	roots := func(o *setupOpts) { o.client.Roots = []mcp.Root{{URI: "file:///r"}} }
	runWith(t, []mode{http2026, http2026JSON, inproc2026, stdio2026}, roots, func(t *testing.T, b *testBundle) {
		// Each round alone fits the timeout; together they do not. The
		// margins are wide (half a second either way) because a loaded
		// machine delays both the server's sleeps and the client's timer.
		_, err := b.client.CallTool(context.Background(), "ask", map[string]any{"first_ms": 1000, "then_ms": 1000}, &mcp.CallOptions{Timeout: 1500 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("two rounds past the deadline: CallTool = %v, want ErrTimeout", err)
		}
		calls := b.received("tools/call")
		if len(calls) != 2 {
			t.Fatalf("server received %d rounds, want 2", len(calls))
		}
		b.assertCancelledOnTheWire(calls[1].ID)
	})
	runWith(t, []mode{http2026, inproc2026}, roots, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		b.cancelWhenStarted("ask", 2, cancel) // round 2 is running
		if _, err := b.client.CallTool(ctx, "ask", map[string]any{"then_ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("CallTool = %v, want ErrCancelled", err)
		}
		calls := b.received("tools/call")
		if len(calls) != 2 {
			t.Fatalf("server received %d rounds, want 2 (no round after the cancel)", len(calls))
		}
		b.assertCancelledOnTheWire(calls[1].ID)
	})
}

func TestHTTPNegotiation(t *testing.T) {
	t.Parallel()
	all := []string{mcptest.Stateless, mcptest.Sessions, mcptest.LegacySSE}
	tests := []struct {
		name        string
		generations []string
		versions    []string
		pin         string
		want        string
		wantGET     bool // the HTTP+SSE event stream was used
		wantErr     bool
	}{
		{name: "modern server", want: mcp.Version20260728},
		{name: "sessions-only server", generations: []string{mcptest.Sessions}, want: mcp.Version20251125},
		{name: "sessions server of 2025-03-26", generations: []string{mcptest.Sessions}, versions: []string{mcp.Version20250326}, want: mcp.Version20250326},
		{name: "HTTP+SSE-only server is detected", generations: []string{mcptest.LegacySSE}, versions: []string{mcp.Version20241105}, want: mcp.Version20241105, wantGET: true},
		{name: "pinned 2024-11-05 uses HTTP+SSE", generations: all, pin: mcp.Version20241105, want: mcp.Version20241105, wantGET: true},
		{name: "pinned handshake era on a stateless server", generations: []string{mcptest.Stateless}, pin: mcp.Version20251125, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mcptest.NewServer(&mcptest.Options{Versions: tt.versions})
			t.Cleanup(s.Close)
			hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: tt.generations}))
			t.Cleanup(hs.Close)
			c, err := mcp.Connect(context.Background(), mcp.HTTP(hs.URL, hs.Client()), &mcp.ClientOptions{ProtocolVersion: tt.pin})
			if tt.wantErr {
				if err == nil {
					c.Close()
					t.Fatal("Connect succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.ProtocolVersion() != tt.want {
				t.Errorf("negotiated %s, want %s", c.ProtocolVersion(), tt.want)
			}
			if res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "ok"}, nil); err != nil || res.Text() != "ok" {
				t.Fatalf("CallTool = %v, %v", res, err)
			}
			if got := len(s.ReceivedMessages("GET")) > 0; got != tt.wantGET {
				t.Errorf("used the HTTP+SSE stream: %v, want %v", got, tt.wantGET)
			}
		})
	}
}

// The headers every revision asks for, and the caller's static headers,
// go with every request; 2026-07-28 requests name their method and tool.
func TestHTTPHeaders(t *testing.T) {
	runWith(t, []mode{http2026, http2025, {name: "http/2025-03-26", version: mcp.Version20250326, http: &mcptest.HTTPOptions{}}}, func(o *setupOpts) {
		o.header = http.Header{"Authorization": {"Bearer test-token"}}
	}, func(t *testing.T, b *testBundle) {
		b.mustCall("echo", nil)
		// A tool name that is not plain ASCII travels base64-encoded; the
		// server decodes it and finds it unknown (not a header mismatch).
		_, err := b.client.CallTool(context.Background(), "ünïcode tool", nil, nil)
		if !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
			t.Errorf("non-ASCII tool name: %v, want invalid params (unknown tool)", err)
		}
		checked := 0
		for _, r := range b.records() {
			if r.Kind != mcptest.Received || r.Header == nil {
				continue
			}
			if got := r.Header.Get("Authorization"); got != "Bearer test-token" {
				t.Errorf("%s: Authorization = %q", r.Method, got)
			}
			if r.Method == "" || r.Method == "initialize" || r.Method == "DELETE" {
				continue
			}
			checked++
			wantVersion := b.mode.version
			if b.mode.version == mcp.Version20250326 {
				wantVersion = "" // the header exists from 2025-06-18 on
			}
			if got := r.Header.Get("MCP-Protocol-Version"); got != wantVersion {
				t.Errorf("%s: MCP-Protocol-Version = %q, want %q", r.Method, got, wantVersion)
			}
			if b.mode.modernHTTP() && r.Header.Get("Mcp-Method") != r.Method {
				t.Errorf("%s: Mcp-Method = %q", r.Method, r.Header.Get("Mcp-Method"))
			}
			if !b.mode.modernHTTP() && r.Session == "" && r.Method != "server/discover" {
				t.Errorf("%s: no Mcp-Session-Id", r.Method)
			}
		}
		if checked == 0 {
			t.Fatal("the server recorded no request whose headers could be checked")
		}
		for _, r := range b.records() {
			if r.Kind == mcptest.Rejected && strings.Contains(r.Reason, "match") {
				t.Errorf("server rejected a header: %s", r.Reason)
			}
		}
	})
}

// A session the server forgot (404) ends the client with ErrSessionExpired;
// connecting again starts a new one.
func TestHTTPSessionExpiry(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.Sessions}}))
	t.Cleanup(hs.Close)
	c, err := mcp.Connect(context.Background(), mcp.HTTP(hs.URL, hs.Client()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.ExpireSessions()
	_, err = c.CallTool(context.Background(), "echo", nil, nil)
	if !errors.Is(err, mcp.ErrSessionExpired) || !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("CallTool in an expired session = %v, want ErrSessionExpired and ErrClosed", err)
	}
	c2, err := mcp.Connect(context.Background(), mcp.HTTP(hs.URL, hs.Client()), nil)
	if err != nil {
		t.Fatalf("reconnecting: %v", err)
	}
	defer c2.Close()
	if _, err := c2.CallTool(context.Background(), "echo", nil, nil); err != nil {
		t.Fatalf("in the new session: %v", err)
	}
}

// A redirect is never followed: it could carry a credential to a host
// nobody vetted.
func TestHTTPRedirectIsRefused(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	t.Cleanup(elsewhere.Close)
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{RedirectTo: elsewhere.URL}))
	t.Cleanup(hs.Close)
	tr := mcp.HTTP(hs.URL, hs.Client())
	tr.Header = http.Header{"Authorization": {"Bearer secret-token"}}
	_, err := mcp.Connect(context.Background(), tr, nil)
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("Connect = %v, want an error about the redirect", err)
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Errorf("the error shows the credential: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target was reached %d times", n)
	}
}

// An oversized response fails its own call only; over HTTP the connection
// goes on.
func TestHTTPResponseTooLarge(t *testing.T) {
	runWith(t, []mode{http2026, http2026JSON, http2025}, func(o *setupOpts) {
		o.client.MaxMessageSize = 64 << 10
	}, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "big", map[string]any{"bytes": 1 << 20}, nil)
		var pe *mcp.ProtocolError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "message longer than 65536 bytes (MaxMessageSize)") {
			t.Fatalf("CallTool = %v, want a ProtocolError naming the limit", err)
		}
		b.mustCall("echo", map[string]any{"text": "next"})
	})
}

// A handshake-era server may end a response stream early after a priming
// event (2025-11-25 polling); the client resumes it with GET and
// Last-Event-ID after the delay the server asked for.
func TestHTTPStreamResumption(t *testing.T) {
	runWith(t, []mode{http2025}, func(o *setupOpts) {
		o.http = func(h *mcptest.HTTPOptions) { h.PrimeStream = 20 * time.Millisecond }
	}, func(t *testing.T, b *testBundle) {
		var steps int
		res, err := b.client.CallTool(context.Background(), "progress", map[string]any{"count": 3, "interval_ms": 30}, &mcp.CallOptions{
			OnProgress: func(mcp.Progress) { steps++ },
		})
		if err != nil || res.Text() != "progress done" || steps != 3 {
			t.Fatalf("CallTool = %v, %v with %d progress steps; want the result and 3 steps", res, err, steps)
		}
		gets := b.received("GET")
		if len(gets) == 0 || !strings.Contains(gets[0].Reason, "Last-Event-ID") {
			t.Errorf("the stream was not resumed with Last-Event-ID: %s", formatRecords(gets))
		}
	})
}

type ctxKey struct{}

// valueSpy is a RoundTripper that records a context value of each request.
type valueSpy struct {
	next http.RoundTripper
	seen chan any
}

func (v *valueSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	if val := r.Context().Value(ctxKey{}); val != nil {
		select {
		case v.seen <- val:
		default:
		}
	}
	return v.next.RoundTrip(r)
}

// A call's HTTP request carries the caller's context values (an egress
// transport reads the run id from there), though not its cancellation.
func TestHTTPRequestsCarryTheCallersValues(t *testing.T) {
	for _, gen := range [][]string{{mcptest.Stateless}, {mcptest.Sessions}, {mcptest.LegacySSE}} {
		t.Run(gen[0], func(t *testing.T) {
			t.Parallel()
			s := mcptest.NewServer(nil)
			t.Cleanup(s.Close)
			hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: gen}))
			t.Cleanup(hs.Close)
			spy := &valueSpy{next: hs.Client().Transport, seen: make(chan any, 16)}
			c, err := mcp.Connect(context.Background(), mcp.HTTP(hs.URL, &http.Client{Transport: spy}), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.WithValue(context.Background(), ctxKey{}, "run_42")
			if _, err := c.CallTool(ctx, "echo", nil, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case v := <-spy.seen:
				if v != "run_42" {
					t.Errorf("value = %v", v)
				}
			default:
				t.Error("the call's request did not carry the caller's context value")
			}
		})
	}
}

// 2026-07-28 custom headers from tool parameters: annotated arguments
// travel as Mcp-Param-* headers too (non-ASCII values base64-wrapped; an
// absent argument sends none); a tool whose annotation breaks the rules is
// left out of ListTools.
func TestHTTPParamHeaders(t *testing.T) {
	runWith(t, []mode{http2026, http2026JSON}, func(o *setupOpts) { o.server.InvalidTool = true }, func(t *testing.T, b *testBundle) {
		tools, err := b.client.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			if tool.Name == "bad_header" {
				t.Error("a tool with an invalid x-mcp-header was listed")
			}
		}
		for _, args := range []map[string]any{
			{"region": "eu-west1", "shard": 7},
			{"region": "zürich "},
			{"shard": 0},
			{},
		} {
			if _, err := b.client.CallTool(context.Background(), "route", args, nil); err != nil {
				t.Errorf("route %v: %v", args, err)
			}
		}
		for _, r := range b.records() {
			if r.Kind == mcptest.Rejected {
				t.Errorf("server rejected a request: %s", r.Reason)
			}
		}
		calls := b.received("tools/call")
		if got := calls[0].Header.Get("Mcp-Param-Region"); got != "eu-west1" {
			t.Errorf("Mcp-Param-Region = %q", got)
		}
		if got := calls[1].Header.Get("Mcp-Param-Region"); !strings.HasPrefix(got, "=?base64?") {
			t.Errorf("a non-ASCII value went out as %q, want base64-wrapped", got)
		}
	})
}

// Shutdown with an ended context does not wait out CloseTimeout (an hour
// here) for a server that never answers the session's DELETE. A Shutdown that waited would hang the test until its timeout.
func TestHTTPShutdownDoesNotWaitForAStalledDelete(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(&mcptest.Options{Stall: []string{"DELETE"}})
	defer s.Close()
	hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{}))
	defer hs.Close()
	tr := &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), CloseTimeout: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125})
	if err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	end()
	if err := c.Shutdown(ended); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}
