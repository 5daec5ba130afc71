package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), ssePatience)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.HTTP(hs.URL, hs.Client()), &mcp.ClientOptions{ProtocolVersion: mcp.Version20241105})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "refuse-me"}, nil)
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
