package mcp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A request goes out in one write, headers and body together, as net/http
// writes a request whose body it knows to be in memory: noting when the
// body is first read made it flush the headers on their own first.
func TestHTTPRequestIsOneWrite(t *testing.T) {
	for _, tt := range []struct {
		name, version string
		generations   []string
	}{
		{"stateless/2026-07-28", mcp.Version20260728, []string{mcptest.Stateless}},
		{"sessions/2025-11-25", mcp.Version20251125, []string{mcptest.Sessions}},
		{"http+sse/2024-11-05", mcp.Version20241105, []string{mcptest.LegacySSE}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mcptest.NewServer(nil)
			t.Cleanup(s.Close)
			hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: tt.generations}))
			t.Cleanup(hs.Close)
			var writes atomic.Int64
			d := &net.Dialer{}
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{Conn: conn, writes: &writes}, nil
			}}
			t.Cleanup(tr.CloseIdleConnections)
			ctx, cancel := context.WithTimeout(context.Background(), ssePatience)
			defer cancel()
			c, err := mcp.Connect(ctx, mcp.HTTP(hs.URL, &http.Client{Transport: tr}), &mcp.ClientOptions{ProtocolVersion: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			for range 3 {
				before := writes.Load()
				if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "one"}, nil); err != nil {
					t.Fatal(err)
				}
				if n := writes.Load() - before; n != 1 {
					t.Fatalf("a tools/call went out in %d writes, want 1", n)
				}
			}
		})
	}
}

// A call cancelled while its connection is still being dialled never
// reached the server, so nothing is sent about it: no
// notifications/cancelled (which would only carry a credential for
// nothing). The write that would carry it is what tells the two apart.
func TestHTTPCancelWhileDiallingSendsNothing(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	hs := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.Sessions}}))
	t.Cleanup(hs.Close)
	var (
		mu      sync.Mutex
		hold    bool
		held    = make(chan struct{})
		release = make(chan struct{})
	)
	d := &net.Dialer{}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		h := hold
		hold = false
		mu.Unlock()
		if h {
			close(held)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
			}
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), ssePatience)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.HTTP(hs.URL, &http.Client{Transport: tr}), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	hold = true // the call's own dial
	mu.Unlock()
	callCtx, cancelCall := context.WithCancel(ctx)
	go func() {
		<-held
		cancelCall()
	}()
	if _, err := c.CallTool(callCtx, "slow", map[string]any{"ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
		t.Fatalf("CallTool cancelled while dialling = %v, want ErrCancelled", err)
	}
	// Close waits for the cancellation on its way, if one were sent.
	c.Close()
	if got := s.ReceivedMessages("notifications/cancelled"); len(got) != 0 {
		t.Fatalf("the server received %d notifications/cancelled for a call that never reached it", len(got))
	}
	if got := s.ReceivedMessages("tools/call"); len(got) != 0 {
		t.Fatalf("the server received the call after all: %v", got)
	}
}
