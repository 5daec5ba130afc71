package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"golang.org/x/oauth2"
)

// reason is why the Transport needs a new token.
type reason int

const (
	reasonUnauthorized reason = iota // the server answered 401
	reasonStepUp                     // the server answered 403 insufficient_scope
	reasonLogin                      // Transport.Login was called
)

// outcome is what a token acquisition did.
type outcome int

const (
	outcomeReused     outcome = iota + 1 // a token someone else obtained
	outcomeRefreshed                     // a refresh grant
	outcomeAuthorized                    // a new grant from the authorization server
)

// tries records what one request already tried, so that it tries each
// remedy at most once.
type tries struct {
	refreshed bool // a refresh was tried
	fresh     bool // a token was newly granted
}

func (t *tries) add(o outcome) {
	switch o {
	case outcomeRefreshed:
		t.refreshed = true
	case outcomeAuthorized:
		t.fresh = true
	}
}

// obtain gets a better token for the resource res at u after the server
// refused sent (nil: no token was sent), shared with concurrent callers.
func (t *Transport) obtain(ctx context.Context, u *url.URL, res string, st *resourceState, why reason, ch challenge, sent *oauth2.Token, tried tries) (outcome, error) {
	return t.shareOutcome(ctx, res, func(ctx context.Context) (outcome, error) {
		return t.acquire(ctx, u, res, st, why, ch, sent, tried)
	})
}

// acquire is obtain's shared leg: reuse a token another caller got, else
// refresh, else discover and grant anew.
func (t *Transport) acquire(ctx context.Context, u *url.URL, res string, st *resourceState, why reason, ch challenge, sent *oauth2.Token, tried tries) (outcome, error) {
	t.mu.Lock()
	cur, key, as := st.tok, st.key, st.as
	t.mu.Unlock()
	if why == reasonUnauthorized && cur != nil && !sameToken(cur, sent) {
		return outcomeReused, nil
	}
	if why == reasonUnauthorized && !tried.refreshed && sent != nil && sent.RefreshToken != "" && as != nil {
		err := t.refresh(ctx, res, st, key, as, sent)
		if err == nil {
			return outcomeRefreshed, nil
		}
		if ctx.Err() != nil {
			return 0, err
		}
		t.logger().Debug("oauth: refresh failed; authorizing anew", "resource", res, "err", err)
	}

	prm, err := t.discoverResource(ctx, u, ch)
	if err != nil {
		return 0, err
	}
	issuer, resource, supplied := originOf(u), res, false
	if prm != nil {
		issuer, resource, supplied = prm.AuthorizationServers[0], prm.Resource, true
	}
	as, err = t.discoverServer(ctx, issuer, supplied, prm == nil)
	if err != nil {
		return 0, err
	}
	newKey := Key{Issuer: as.Issuer, Resource: resource}
	t.logger().Debug("oauth: discovered", "resource", resource, "issuer", as.Issuer, "fallback", as.fallback)

	if why == reasonUnauthorized {
		stored, err := t.Store.Token(ctx, newKey)
		switch {
		case err == nil && !sameToken(stored, sent):
			t.mu.Lock()
			st.key, st.tok, st.as = newKey, stored, as
			t.mu.Unlock()
			return outcomeReused, nil
		case err != nil && !errors.Is(err, ErrNoToken):
			return 0, fmt.Errorf("oauth: reading the token for %s: %w", resource, err)
		}
	}

	t.mu.Lock()
	prev := st.scopes
	if st.key != newKey {
		prev = nil
	}
	t.mu.Unlock()
	scopes := t.selectScopes(ch, prm, as, prev, why == reasonStepUp)
	tok, err := t.grant(ctx, newKey, as, scopes)
	if err != nil {
		return 0, err
	}
	if err := t.keep(ctx, newKey, tok); err != nil {
		return 0, err
	}
	t.mu.Lock()
	st.key, st.tok, st.as, st.scopes = newKey, tok, as, scopes
	t.mu.Unlock()
	return outcomeAuthorized, nil
}

// refreshShared is the shared leg of a refresh before expiry.
func (t *Transport) refreshShared(ctx context.Context, res string, st *resourceState, old *oauth2.Token) (outcome, error) {
	t.mu.Lock()
	cur, key, as := st.tok, st.key, st.as
	t.mu.Unlock()
	if cur != nil && !sameToken(cur, old) {
		return outcomeReused, nil // another caller refreshed already
	}
	if as == nil {
		// Read from the store by a new process: rediscover the
		// endpoints before refreshing.
		var err error
		as, err = t.discoverServer(ctx, key.Issuer, true, false)
		if err != nil {
			return 0, err
		}
		t.mu.Lock()
		st.as = as
		t.mu.Unlock()
	}
	if err := t.refresh(ctx, res, st, key, as, old); err != nil {
		return 0, err
	}
	return outcomeRefreshed, nil
}

// refresh redeems old's refresh token and keeps the new token.
func (t *Transport) refresh(ctx context.Context, res string, st *resourceState, key Key, as *serverMetadata, old *oauth2.Token) error {
	tok, err := t.refreshGrant(ctx, key, as, old)
	if err != nil {
		return err
	}
	if err := t.keep(ctx, key, tok); err != nil {
		return err
	}
	t.mu.Lock()
	if st.key == key {
		st.tok = tok
	}
	t.mu.Unlock()
	return nil
}

// keep stores a complete token. It runs even if every caller has gone by
// now: the server has issued the token (and may have retired the refresh
// token it replaces), so dropping it would lose the grant.
func (t *Transport) keep(ctx context.Context, key Key, tok *oauth2.Token) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.legTimeout())
	defer cancel()
	if err := t.Store.SetToken(sctx, key, tok); err != nil {
		return fmt.Errorf("oauth: storing the token for %s: %w", key.Resource, err)
	}
	return nil
}

// grant obtains a new token for key from the authorization server as.
func (t *Transport) grant(ctx context.Context, key Key, as *serverMetadata, scopes []string) (*oauth2.Token, error) {
	if _, err := t.vet(ctx, as.TokenEndpoint, true); err != nil {
		return nil, err
	}
	switch t.Grant {
	case GrantClientCredentials:
		return t.clientCredentials(ctx, key, as, scopes)
	case GrantJWTBearer:
		return t.jwtBearer(ctx, key, as, scopes)
	}
	return t.authorizationCode(ctx, key, as, scopes)
}

// sameToken reports whether a and b carry the same access token; a nil
// token is the same only as nil.
func sameToken(a, b *oauth2.Token) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.AccessToken == b.AccessToken
}

// originOf is u's origin, the issuer of a 2025-03-26 server that has no
// Protected Resource Metadata.
func originOf(u *url.URL) string {
	c := url.URL{Scheme: u.Scheme, Host: u.Host}
	return c.String()
}
