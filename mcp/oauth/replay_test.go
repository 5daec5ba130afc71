package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestNoReplayAfterConnectionFailure: a request whose connection fails
// (the server read it and hung up without answering) is not sent again:
// it may have been acted on.
func TestNoReplayAfterConnectionFailure(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int32
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		seen.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{"once":true}`); err == nil {
		t.Fatal("want the connection failure as an error")
	}
	if got := seen.Load(); got != 1 {
		t.Errorf("the server received the request %d times, want 1", got)
	}
}

// TestBodyNotReplayable: a request whose body cannot be replayed (no
// GetBody) gets the server's 401 rather than a retry without its body.
func TestBodyNotReplayable(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	req, err := http.NewRequest(http.MethodPost, rs.mcpURL(), io.NopCloser(strings.NewReader(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newTransport().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status = %d, want the server's 401", resp.StatusCode)
	}
	if len(as.auths()) != 0 {
		t.Errorf("authorized for a request it could not retry")
	}
}

// TestRejectedFreshToken: a server that rejects the token it was just
// issued gets ErrUnauthorized, not an endless loop of authorizations.
func TestRejectedFreshToken(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	h := rs.Config.Handler
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.revoke() // every token is refused as soon as it is used
		h.ServeHTTP(w, r)
	})
	_, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if n := len(as.auths()); n != 1 {
		t.Errorf("authorizations = %d, want 1, then ErrUnauthorized", n)
	}
}

// oneShot is a request body that can be read once, like mcp's (which
// records when its first byte is read); GetBody makes fresh ones.
type oneShot struct{ r *strings.Reader }

func (o *oneShot) Read(p []byte) (int, error) { return o.r.Read(p) }
func (o *oneShot) Close() error               { return nil }

// TestRetryReplaysBody: the request retried after the 401 carries the
// whole body again, from GetBody.
func TestRetryReplaysBody(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`
	req, err := http.NewRequest(http.MethodPost, rs.mcpURL(), &oneShot{strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return &oneShot{strings.NewReader(body)}, nil }
	resp, err := newTransport().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	bodies, _ := rs.seen()
	if resp.StatusCode != http.StatusOK || len(bodies) != 2 || bodies[1] != body {
		t.Errorf("status %d, the server saw %q: want the body twice", resp.StatusCode, bodies)
	}
}
