package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Transport is an http.RoundTripper that adds a bearer token to the
// requests to one or more MCP servers (resources) and, on a 401 (or a 403
// insufficient_scope) the server answered, discovers, registers, authorizes
// and retries. Use it as the Transport of the *http.Client given to
// mcp.HTTPTransport. The zero value with a Store is a working public
// client with Dynamic Client Registration and no user interaction.
//
// A request is retried only after the server answered it with 401 or 403,
// never after a connection failure, and only if its body can be replayed
// (Request.GetBody, which http.NewRequest sets for in-memory bodies); a
// request whose body cannot be replayed gets the server's answer.
//
// A Transport must not be copied after first use.
type Transport struct {
	// Base carries every request: the MCP requests and every OAuth leg
	// (metadata, registration, token), each with the context of the
	// request that needed it. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Store keeps tokens and client registrations. Required.
	Store TokenStore
	// Client describes the OAuth client.
	Client ClientConfig
	// Grant is how tokens are obtained: the authorization code grant
	// (the default), client credentials, or the JWT bearer grant.
	Grant Grant
	// Authorize shows the user authURL (opens a browser, prints it) and
	// returns the query parameters the authorization server sent to the
	// redirect URI (code, state, iss, or error), for example from
	// [LoopbackRedirect.Wait]. Nil means non-interactive: a resource that
	// needs a user's authorization fails with *AuthorizationRequiredError.
	Authorize func(ctx context.Context, authURL string) (url.Values, error)
	// CheckURL vets every URL that came from metadata a server supplied
	// (resource_metadata, authorization servers, endpoints) before any
	// request goes to it and before a client secret is read for it. An
	// error refuses the URL. Nil allows https URLs, and http URLs only on
	// loopback addresses.
	CheckURL func(ctx context.Context, u *url.URL) error
	// Logger receives debug lines about discovery and token legs; never a
	// token, code, secret or verifier. Nil means no logging.
	Logger *slog.Logger
	// MaxStepUps bounds the re-authorizations for more scope that one
	// request may cause. Zero means 2.
	MaxStepUps int
	// LegTimeout bounds each OAuth HTTP leg. Zero means 30 seconds.
	LegTimeout time.Duration
	// AuthorizeTimeout bounds the Authorize hook. Zero means 10 minutes.
	AuthorizeTimeout time.Duration
	// ExpiryDelta is how long before its expiry a token is refreshed.
	// Zero means 30 seconds.
	ExpiryDelta time.Duration

	// now is the clock; nil means time.Now. Tests move it.
	now func() time.Time

	mu        sync.Mutex
	resources map[string]*resourceState // by canonical resource URI
	flights   map[string]*flight        // by canonical resource URI
}

// resourceState is what the Transport knows about one MCP server. Guarded
// by Transport.mu.
type resourceState struct {
	key    Key           // zero until discovered
	tok    *oauth2.Token // the token for key, once read or obtained
	as     *serverMetadata
	scopes []string // the scopes last requested
}

// Defaults.
const (
	defaultMaxStepUps       = 2
	defaultLegTimeout       = 30 * time.Second
	defaultAuthorizeTimeout = 10 * time.Minute
	defaultExpiryDelta      = 30 * time.Second
)

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) logger() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (t *Transport) maxStepUps() int {
	if t.MaxStepUps > 0 {
		return t.MaxStepUps
	}
	return defaultMaxStepUps
}

func (t *Transport) legTimeout() time.Duration {
	if t.LegTimeout > 0 {
		return t.LegTimeout
	}
	return defaultLegTimeout
}

func (t *Transport) authorizeTimeout() time.Duration {
	if t.AuthorizeTimeout > 0 {
		return t.AuthorizeTimeout
	}
	return defaultAuthorizeTimeout
}

func (t *Transport) expiryDelta() time.Duration {
	if t.ExpiryDelta > 0 {
		return t.ExpiryDelta
	}
	return defaultExpiryDelta
}

// expiring reports whether tok is due for a refresh: within ExpiryDelta
// of its expiry, or within half its lifetime for a token that lives less
// than twice ExpiryDelta (which would otherwise be refreshed on every
// request).
func (t *Transport) expiring(tok *oauth2.Token) bool {
	if tok.Expiry.IsZero() {
		return false
	}
	delta := t.expiryDelta()
	if life := time.Duration(tok.ExpiresIn) * time.Second; life > 0 && life/2 < delta {
		delta = life / 2
	}
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	return !now().Add(delta).Before(tok.Expiry)
}

// state returns the state of the resource res, creating it.
func (t *Transport) state(res string) *resourceState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resources == nil {
		t.resources = make(map[string]*resourceState)
	}
	st := t.resources[res]
	if st == nil {
		st = &resourceState{}
		t.resources[res] = st
	}
	return st
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.Store == nil {
		closeBody(req)
		return nil, errors.New("oauth: Transport has no Store")
	}
	res := canonicalResource(req.URL)
	st := t.state(res)
	var (
		stepUps  int
		sent     *oauth2.Token // the token the last attempt carried
		tried    tries
		attempts int
	)
	for {
		if err := ctx.Err(); err != nil {
			// No credential goes out for a caller already gone.
			closeBody(req)
			return nil, err
		}
		tok, err := t.current(ctx, res, st)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		out, err := attempt(req, attempts)
		if err != nil {
			return nil, err
		}
		attempts++
		if tok != nil {
			out.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		sent = tok
		resp, err := t.base().RoundTrip(out)
		if err != nil {
			// The request may be half-sent: never send it again.
			return nil, err
		}
		ch, _ := parseChallenge(resp.Header)
		var why reason
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			why = reasonUnauthorized
		case resp.StatusCode == http.StatusForbidden && ch.Error == "insufficient_scope":
			why = reasonStepUp
		default:
			return resp, nil
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			// Cannot replay the body: the caller gets the answer.
			return resp, nil
		}
		drain(resp)
		switch why {
		case reasonUnauthorized:
			if tried.fresh {
				return nil, fmt.Errorf("%w: %s answered 401 to the token it was issued for", ErrUnauthorized, res)
			}
		case reasonStepUp:
			if stepUps >= t.maxStepUps() {
				return nil, fmt.Errorf("%w: %s still needs scope %q after %d re-authorizations", ErrStepUpLimit, res, ch.Scopes, stepUps)
			}
			stepUps++
		}
		got, err := t.obtain(ctx, req.URL, res, st, why, ch, sent, tried)
		if err != nil {
			return nil, err
		}
		tried.add(got)
	}
}

// attempt returns the request to send for attempt n: the caller's request
// cloned (so that its headers stay the caller's), with a fresh body after
// the first.
func attempt(req *http.Request, n int) (*http.Request, error) {
	out := req.Clone(req.Context())
	if n > 0 && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("oauth: replaying the request body: %w", err)
		}
		out.Body = body
	}
	return out, nil
}

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// drain reads a little of a response that will be discarded, so that its
// connection may be reused, and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// current returns the token to send to res: the one in memory, else the
// stored one, refreshed first if it is about to expire. nil means none is
// known yet (the server's 401 will start discovery).
func (t *Transport) current(ctx context.Context, res string, st *resourceState) (*oauth2.Token, error) {
	t.mu.Lock()
	key, tok := st.key, st.tok
	t.mu.Unlock()
	if key == (Key{}) {
		return nil, nil
	}
	if tok == nil {
		stored, err := t.Store.Token(ctx, key)
		switch {
		case errors.Is(err, ErrNoToken):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("oauth: reading the token for %s: %w", res, err)
		}
		tok = stored
		t.mu.Lock()
		if st.key == key && st.tok == nil {
			st.tok = tok
		}
		t.mu.Unlock()
	}
	if !t.expiring(tok) || tok.RefreshToken == "" {
		return tok, nil
	}
	// About to expire: refresh, shared with every caller that notices.
	err := t.share(ctx, res, func(ctx context.Context) (outcome, error) {
		return t.refreshShared(ctx, res, st, tok)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The old token may still work; the server's 401 says if not.
		t.logger().Debug("oauth: refresh before expiry failed", "resource", res, "err", err)
		return tok, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.tok, nil
}
