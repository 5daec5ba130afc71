package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Login authorizes the Transport for the MCP server at resourceURL now,
// whatever token is stored: it discovers the server's authorization
// server, registers if it must, runs the grant (through Authorize for the
// authorization code grant) and stores the token. It returns the key the
// token is stored under. `andon auth login` is this with a
// [LoopbackRedirect].
func (t *Transport) Login(ctx context.Context, resourceURL string) (Key, error) {
	if t.Store == nil {
		return Key{}, fmt.Errorf("oauth: Transport has no Store")
	}
	u, err := url.Parse(resourceURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Key{}, fmt.Errorf("oauth: login: %q is not an http(s) URL", resourceURL)
	}
	ch, err := t.probe(ctx, u)
	if err != nil {
		return Key{}, err
	}
	res := canonicalResource(u)
	st := t.state(res)
	if _, err := t.obtain(ctx, u, res, st, reasonLogin, ch, nil, tries{}); err != nil {
		return Key{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.key, nil
}

// probe asks the server, without a token, for its challenge: the
// resource_metadata URL and scope a 401 names.
func (t *Transport) probe(ctx context.Context, u *url.URL) (challenge, error) {
	lctx, cancel := t.legContext(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(lctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return challenge{}, fmt.Errorf("oauth: login probe: %w", err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := t.leg(req)
	if err != nil {
		return challenge{}, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ch, _ := parseChallenge(resp.Header)
	return ch, nil
}
