package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// ssePatience only keeps a broken test from hanging; nothing is timed.
const ssePatience = 10 * time.Second

// On HTTP+SSE a request's response comes on the stream, not in the reply
// to its POST; a POST the server refuses must still fail its call, at once
// and with the server's status, not leave it waiting for a response that
// never comes; and the connection goes on.
func TestHTTPSSERefusedPostFailsTheCall(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	inner := s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.LegacySSE}})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte("refuse-me")) {
				http.Error(w, "refused", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), ssePatience)
	defer cancel()
	c := connectLegacySSE(ctx, t, hs)

	_, err := c.CallTool(ctx, "echo", map[string]any{"text": "refuse-me"}, nil)
	var he *mcp.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("CallTool with its POST refused = %v, want an HTTPError with status 503", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the refused call ended only with the test's deadline: %v", err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "next"}, nil)
	if err != nil || res.Text() != "next" {
		t.Fatalf("the next call = %v, %v; want its text back", res, err)
	}
}

// On HTTP+SSE the caller does not wait for its request's POST (the
// response comes on the stream), and a call cancelled while that POST is
// still on its way gets control back at once — but its
// notifications/cancelled, which rides a POST of its own, must not reach
// the server before the request: the server would take it for a request it
// never had, and the handler would run on.
func TestHTTPSSECancelNeverOvertakesItsRequest(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	inner := s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.LegacySSE}})
	callArrived := make(chan struct{})
	callerReturned := make(chan struct{})
	noteArrived := make(chan struct{})
	var arrivals sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case bytes.Contains(body, []byte(`"tools/call"`)):
				// Held until the cancellation overtakes it, or until the
				// caller has its error back and a grace period has passed
				// (the grace only gives a broken client the time to send
				// its cancellation first; nothing is timed).
				close(callArrived)
				select {
				case <-noteArrived:
				case <-callerReturned:
					select {
					case <-noteArrived:
					case <-time.After(100 * time.Millisecond):
					}
				}
			case bytes.Contains(body, []byte(`"notifications/cancelled"`)):
				arrivals.Do(func() { close(noteArrived) })
			}
		}
		inner.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), ssePatience)
	defer cancel()
	c := connectLegacySSE(ctx, t, hs)

	callCtx, cancelCall := context.WithCancel(ctx)
	go func() {
		<-callArrived
		cancelCall()
	}()
	_, err := c.CallTool(callCtx, "slow", map[string]any{"ms": 30000}, nil)
	close(callerReturned)
	if !errors.Is(err, mcp.ErrCancelled) {
		t.Fatalf("CallTool cancelled while its POST was held = %v, want ErrCancelled", err)
	}
	if _, err := s.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" }); err != nil {
		t.Fatalf("the handler was never cancelled: %v; received: %v", err, methods(s.ReceivedMessages("")))
	}
	got := methods(s.ReceivedMessages(""))
	call, note := slices.Index(got, "tools/call"), slices.Index(got, "notifications/cancelled")
	if call < 0 || note < call {
		t.Fatalf("the server received %v: the cancellation before its request", got)
	}
}

// methods lists the methods of records.
// connectLegacySSE connects to hs over 2024-11-05 HTTP+SSE; both are
// closed when t ends.
func connectLegacySSE(ctx context.Context, t *testing.T, hs *httptest.Server) *mcp.Client {
	t.Helper()
	t.Cleanup(hs.Close)
	c, err := mcp.Connect(ctx, mcp.HTTP(hs.URL, hs.Client()), &mcp.ClientOptions{ProtocolVersion: mcp.Version20241105})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func methods(recs []mcptest.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Method)
	}
	return out
}
