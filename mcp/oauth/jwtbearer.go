package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// jwtBearerGrant is the grant type of RFC 7523 §2.1.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// jwtBearer runs the JWT bearer grant with the assertion
// ClientConfig.Assertion gives for this authorization server and resource.
// A rejected assertion is reported, never retried with another grant.
func (t *Transport) jwtBearer(ctx context.Context, key Key, as *serverMetadata, scopes []string) (*oauth2.Token, error) {
	if t.Client.Assertion == nil {
		return nil, errors.New("oauth: the JWT bearer grant needs ClientConfig.Assertion")
	}
	lctx, cancel := t.legContext(ctx)
	assertion, err := t.Client.Assertion(lctx, as.Issuer, key.Resource)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("oauth: obtaining the assertion for %s: %w", as.Issuer, err)
	}
	form := url.Values{
		"grant_type": {jwtBearerGrant},
		"assertion":  {assertion},
		"resource":   {key.Resource},
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	t.logger().Debug("oauth: token request", "grant", "jwt-bearer", "issuer", as.Issuer)
	return t.tokenPost(ctx, as, form, assertion)
}

// IDJAG is the assertion source of enterprise-managed authorization
// (SEP-990, the Identity Assertion JWT Authorization Grant): it exchanges
// the user's ID token from the enterprise IdP, at the IdP's token endpoint
// (RFC 8693 token exchange), for an ID-JAG naming the MCP server's
// authorization server and resource, which the Transport then presents
// with GrantJWTBearer. Use its Assertion method as
// ClientConfig.Assertion.
type IDJAG struct {
	// TokenEndpoint is the IdP's token endpoint (configuration, not
	// metadata a server supplied).
	TokenEndpoint string
	// ClientID and ClientSecret are the client's registration at the IdP;
	// with a secret, it authenticates with HTTP Basic, else it sends its
	// client_id alone.
	ClientID     string
	ClientSecret string
	// IDToken returns the user's ID token from the IdP.
	IDToken func(ctx context.Context) (string, error)
	// Base carries the request; nil means http.DefaultTransport. Give it
	// the Transport's Base, so this leg is vetted and audited like others.
	Base http.RoundTripper
}

// Token exchange identifiers (RFC 8693 §3, SEP-990).
const (
	tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
	idTokenType        = "urn:ietf:params:oauth:token-type:id_token"
	idJAGType          = "urn:ietf:params:oauth:token-type:id-jag"
)

// Assertion exchanges the ID token for an ID-JAG for the authorization
// server issuer and resource.
func (j *IDJAG) Assertion(ctx context.Context, issuer, resource string) (string, error) {
	if j.IDToken == nil || j.TokenEndpoint == "" {
		return "", errors.New("oauth: IDJAG needs TokenEndpoint and IDToken")
	}
	idToken, err := j.IDToken(ctx)
	if err != nil {
		return "", fmt.Errorf("oauth: the ID token: %w", err)
	}
	form := url.Values{
		"grant_type":           {tokenExchangeGrant},
		"requested_token_type": {idJAGType},
		"audience":             {issuer},
		"resource":             {resource},
		"subject_token":        {idToken},
		"subject_token_type":   {idTokenType},
	}
	if j.ClientSecret == "" {
		form.Set("client_id", j.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("oauth: token exchange request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if j.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(j.ClientID), url.QueryEscape(j.ClientSecret))
	}
	base := j.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return "", fmt.Errorf("oauth: token exchange at the IdP: %s", scrub(err.Error(), []string{idToken}))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return "", fmt.Errorf("oauth: reading the token exchange response: %w", err)
	}
	var r struct {
		tokenResponse
		IssuedTokenType string `json:"issued_token_type"`
	}
	jerr := json.Unmarshal(body, &r)
	if resp.StatusCode/100 != 2 {
		return "", &TokenError{Endpoint: "token exchange", StatusCode: resp.StatusCode, Code: r.Error, Description: scrub(r.ErrorDescription, []string{idToken, j.ClientSecret})}
	}
	if jerr != nil || r.AccessToken == "" {
		return "", fmt.Errorf("%w: token exchange response has no access_token", ErrBadMetadata)
	}
	if r.IssuedTokenType != "" && r.IssuedTokenType != idJAGType {
		return "", fmt.Errorf("%w: the IdP issued %q, not an ID-JAG", ErrBadMetadata, r.IssuedTokenType)
	}
	return r.AccessToken, nil
}
