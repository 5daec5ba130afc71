package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// legContext bounds one OAuth HTTP leg.
func (t *Transport) legContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.legTimeout())
}

// leg sends one OAuth request through Base. Redirects are not followed.
func (t *Transport) leg(req *http.Request) (*http.Response, error) {
	resp, err := t.base().RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: %s %s: %w", req.Method, redact(req.URL), err)
	}
	return resp, nil
}

// oauth2Context is ctx carrying the HTTP client golang.org/x/oauth2 uses:
// Base, never following a redirect.
func (t *Transport) oauth2Context(ctx context.Context) context.Context {
	c := &http.Client{
		Transport:     t.base(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

// authStyle is the golang.org/x/oauth2 style of method.
func authStyle(m AuthMethod) oauth2.AuthStyle {
	if m == AuthClientSecretBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// clientSecretFor is the secret golang.org/x/oauth2 should send: none for
// public clients and JWT assertions.
func clientSecretFor(r *Registration) string {
	switch r.AuthMethod {
	case AuthClientSecretBasic, AuthClientSecretPost:
		return r.ClientSecret
	}
	return ""
}

// assertionParams are the client assertion form parameters of
// private_key_jwt, or nil for other methods.
func (t *Transport) assertionParams(r *Registration, as *serverMetadata) (url.Values, error) {
	if r.AuthMethod != AuthPrivateKeyJWT {
		return nil, nil
	}
	jwt, err := t.clientAssertion(r.ClientID, as.Issuer)
	if err != nil {
		return nil, err
	}
	return url.Values{
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {jwt},
	}, nil
}

// tokenError turns an error of golang.org/x/oauth2 into one that carries
// the server's error code and description but never the response body
// (which a misbehaving server may fill with what it was sent).
func tokenError(err error, secrets ...string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &TokenError{Endpoint: "token", Code: re.ErrorCode, Description: scrub(re.ErrorDescription, secrets)}
		if re.Response != nil {
			te.StatusCode = re.Response.StatusCode
		}
		return te
	}
	return fmt.Errorf("oauth: token request: %s", scrub(err.Error(), secrets))
}

// basicValue is the HTTP Basic credential golang.org/x/oauth2 sends for r,
// which a server echoing its request would echo too.
func basicValue(r *Registration) string {
	if r.AuthMethod != AuthClientSecretBasic || r.ClientSecret == "" {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(r.ClientID) + ":" + url.QueryEscape(r.ClientSecret)))
}

// scrub replaces every non-empty secret in s.
func scrub(s string, secrets []string) string {
	for _, x := range secrets {
		if x != "" {
			s = strings.ReplaceAll(s, x, "[redacted]")
		}
	}
	return s
}

// clientCredentials runs the client credentials grant (RFC 6749 §4.4),
// authenticating with a secret or a private_key_jwt assertion.
func (t *Transport) clientCredentials(ctx context.Context, key Key, as *serverMetadata, scopes []string) (*oauth2.Token, error) {
	reg, err := t.registration(ctx, as)
	if err != nil {
		return nil, err
	}
	params := url.Values{"resource": {key.Resource}}
	extra, err := t.assertionParams(reg, as)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		params[k] = v
	}
	cfg := clientcredentials.Config{
		ClientID:       reg.ClientID,
		ClientSecret:   clientSecretFor(reg),
		TokenURL:       as.TokenEndpoint,
		Scopes:         scopes,
		EndpointParams: params,
		AuthStyle:      authStyle(reg.AuthMethod),
	}
	lctx, cancel := t.legContext(ctx)
	defer cancel()
	t.logger().Debug("oauth: token request", "grant", "client_credentials", "issuer", as.Issuer, "auth_method", reg.AuthMethod)
	tok, err := cfg.Token(t.oauth2Context(lctx))
	if err != nil {
		return nil, tokenError(err, reg.ClientSecret, basicValue(reg), extra.Get("client_assertion"))
	}
	return tok, nil
}

// refreshGrant redeems old's refresh token (RFC 6749 §6) with the resource
// parameter (RFC 8707 §2.2), which golang.org/x/oauth2's refresh cannot
// send. A response without a refresh token keeps the old one.
func (t *Transport) refreshGrant(ctx context.Context, key Key, as *serverMetadata, old *oauth2.Token) (*oauth2.Token, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {old.RefreshToken},
		"resource":      {key.Resource},
	}
	t.logger().Debug("oauth: token request", "grant", "refresh_token", "issuer", as.Issuer)
	tok, err := t.tokenPost(ctx, as, form, old.RefreshToken)
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = old.RefreshToken
	}
	return tok, nil
}

// tokenPost sends form to as's token endpoint with the client's
// authentication and reads the answer. secrets are the form's secret
// values, scrubbed from any error.
func (t *Transport) tokenPost(ctx context.Context, as *serverMetadata, form url.Values, secrets ...string) (*oauth2.Token, error) {
	tu, err := t.vet(ctx, as.TokenEndpoint, true)
	if err != nil {
		return nil, err
	}
	reg, err := t.registration(ctx, as)
	if err != nil {
		return nil, err
	}
	extra, err := t.assertionParams(reg, as)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		form[k] = v
	}
	if reg.AuthMethod != AuthClientSecretBasic {
		form.Set("client_id", reg.ClientID)
	}
	if reg.AuthMethod == AuthClientSecretPost {
		form.Set("client_secret", reg.ClientSecret)
	}
	secrets = append(secrets, reg.ClientSecret, basicValue(reg), extra.Get("client_assertion"))

	lctx, cancel := t.legContext(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, tu.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("oauth: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if reg.AuthMethod == AuthClientSecretBasic {
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret))
	}
	resp, err := t.leg(req)
	if err != nil {
		return nil, errors.New(scrub(err.Error(), secrets))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the token response: %w", err)
	}
	return parseTokenResponse(resp.StatusCode, body, secrets)
}

// tokenResponse is a token endpoint's JSON answer (RFC 6749 §5.1, §5.2).
type tokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	RefreshToken     string          `json:"refresh_token"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	Scope            string          `json:"scope"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// parseTokenResponse reads a token endpoint's answer into a complete token,
// or a *TokenError.
func parseTokenResponse(status int, body []byte, secrets []string) (*oauth2.Token, error) {
	var r tokenResponse
	jerr := json.Unmarshal(body, &r)
	if status/100 != 2 {
		return nil, &TokenError{Endpoint: "token", StatusCode: status, Code: r.Error, Description: scrub(r.ErrorDescription, secrets)}
	}
	if jerr != nil {
		return nil, fmt.Errorf("%w: token response is not JSON", ErrBadMetadata)
	}
	if r.AccessToken == "" {
		return nil, fmt.Errorf("%w: token response has no access_token", ErrBadMetadata)
	}
	tok := &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken}
	if s := strings.Trim(string(r.ExpiresIn), `"`); s != "" && s != "null" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			tok.ExpiresIn = n
			tok.Expiry = time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	extra := map[string]any{}
	if r.Scope != "" {
		extra["scope"] = r.Scope
	}
	return tok.WithExtra(extra), nil
}
