package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"

	"golang.org/x/oauth2"
)

// authorizationCode runs the authorization code grant with PKCE S256
// (OAuth 2.1 §4.1, RFC 7636) and the resource parameter (RFC 8707): the
// Authorize hook shows the user the authorization URL and returns the
// redirect's parameters; the state and the issuer (RFC 9207) are checked
// before the code is redeemed.
func (t *Transport) authorizationCode(ctx context.Context, key Key, as *serverMetadata, scopes []string) (*oauth2.Token, error) {
	if t.Authorize == nil {
		return nil, &AuthorizationRequiredError{Resource: key.Resource, Issuer: key.Issuer, Scopes: scopes}
	}
	if !as.supportsPKCE() {
		return nil, fmt.Errorf("%w: %s lists code_challenge_methods_supported %q", ErrNoPKCE, as.Issuer, as.CodeChallengeMethodsSupported)
	}
	if as.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("%w: %s has no authorization_endpoint", ErrBadMetadata, as.Issuer)
	}
	if _, err := t.vet(ctx, as.AuthorizationEndpoint, true); err != nil {
		return nil, err
	}
	reg, err := t.registration(ctx, as)
	if err != nil {
		return nil, err
	}
	cfg := oauth2.Config{
		ClientID:     reg.ClientID,
		ClientSecret: clientSecretFor(reg),
		Endpoint: oauth2.Endpoint{
			AuthURL:   as.AuthorizationEndpoint,
			TokenURL:  as.TokenEndpoint,
			AuthStyle: authStyle(reg.AuthMethod),
		},
		RedirectURL: t.Client.RedirectURL,
		Scopes:      scopes,
	}
	verifier := oauth2.GenerateVerifier()
	state := randomString()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", key.Resource))

	t.logger().Debug("oauth: asking for authorization", "issuer", as.Issuer, "resource", key.Resource, "scopes", scopes)
	actx, cancel := context.WithTimeout(ctx, t.authorizeTimeout())
	cb, err := t.Authorize(actx, authURL)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("oauth: authorization for %s: %w", key.Resource, err)
	}
	code, err := checkCallback(cb, state, as)
	if err != nil {
		return nil, err
	}

	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", key.Resource)}
	extra, err := t.assertionParams(reg, as)
	if err != nil {
		return nil, err
	}
	for k := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, extra.Get(k)))
	}
	lctx, lcancel := t.legContext(ctx)
	defer lcancel()
	t.logger().Debug("oauth: token request", "grant", "authorization_code", "issuer", as.Issuer, "auth_method", reg.AuthMethod)
	tok, err := cfg.Exchange(t.oauth2Context(lctx), code, opts...)
	if err != nil {
		return nil, tokenError(err, code, verifier, reg.ClientSecret, basicValue(reg), extra.Get("client_assertion"))
	}
	return tok, nil
}

// checkCallback checks the redirect's parameters and returns the code: an
// error response is an *AuthorizationError; the state must be the
// request's; the iss parameter, when present, must be the authorization
// server's issuer exactly, and must be present when the server advertises
// it (RFC 9207 §2.4).
func checkCallback(cb url.Values, state string, as *serverMetadata) (string, error) {
	if e := cb.Get("error"); e != "" {
		return "", &AuthorizationError{Code: e, Description: cb.Get("error_description")}
	}
	if subtle.ConstantTimeCompare([]byte(cb.Get("state")), []byte(state)) != 1 {
		return "", ErrState
	}
	iss, has := cb.Get("iss"), cb.Has("iss")
	switch {
	case has && iss != as.Issuer:
		return "", fmt.Errorf("%w: got %q, want %q", ErrCallbackIssuer, iss, as.Issuer)
	case !has && as.IssParameterSupported:
		return "", fmt.Errorf("%w: %s promises iss and the response has none", ErrCallbackIssuer, as.Issuer)
	}
	code := cb.Get("code")
	if code == "" {
		return "", fmt.Errorf("oauth: the authorization response has no code")
	}
	return code, nil
}

// randomString is 32 random bytes, base64url: a state value.
func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
