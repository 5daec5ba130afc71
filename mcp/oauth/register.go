package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// defaultClientName is the client_name of Dynamic Client Registration.
const defaultClientName = "andon mcp client"

// registration returns the client to use at the authorization server as:
// the pre-registered client, else the registration stored for its issuer,
// else the Client ID Metadata Document URL when the server supports it,
// else a new Dynamic Client Registration (RFC 7591), which it stores.
// A registration made with one authorization server is never used with
// another (SEP-2352): registrations are stored by issuer.
func (t *Transport) registration(ctx context.Context, as *serverMetadata) (*Registration, error) {
	c := t.Client
	if c.ClientID != "" {
		m := c.AuthMethod
		if m == "" {
			m = chooseAuthMethod(as.TokenEndpointAuthMethodsSupported, c.ClientSecret != "", c.PrivateKey != nil)
		}
		return &Registration{ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthMethod: m}, nil
	}
	r, err := t.Store.Registration(ctx, as.Issuer)
	switch {
	case err == nil && (r.SecretExpiresAt.IsZero() || time.Now().Before(r.SecretExpiresAt)):
		return r, nil
	case err != nil && !errors.Is(err, ErrNoRegistration):
		return nil, fmt.Errorf("oauth: reading the client registration for %s: %w", as.Issuer, err)
	}
	if t.Grant == GrantAuthorizationCode && as.ClientIDMetadataDocumentSupported && c.ClientIDMetadataURL != "" {
		return &Registration{ClientID: c.ClientIDMetadataURL, AuthMethod: AuthNone}, nil
	}
	if as.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("%w: %s", ErrNoRegistrationMethod, as.Issuer)
	}
	r, err = t.register(ctx, as)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.legTimeout())
	defer cancel()
	if err := t.Store.SetRegistration(sctx, as.Issuer, r); err != nil {
		return nil, fmt.Errorf("oauth: storing the client registration for %s: %w", as.Issuer, err)
	}
	return r, nil
}

// chooseAuthMethod picks a token endpoint authentication method among those
// the server supports (RFC 8414: absent means client_secret_basic): with a
// private key, private_key_jwt; with a secret, basic then post; else none.
func chooseAuthMethod(supported []string, haveSecret, haveKey bool) AuthMethod {
	if len(supported) == 0 {
		supported = []string{string(AuthClientSecretBasic)}
	}
	var prefs []AuthMethod
	if haveKey {
		prefs = append(prefs, AuthPrivateKeyJWT)
	}
	if haveSecret {
		prefs = append(prefs, AuthClientSecretBasic, AuthClientSecretPost)
	}
	prefs = append(prefs, AuthNone)
	for _, m := range prefs {
		if slices.Contains(supported, string(m)) {
			return m
		}
	}
	return prefs[0]
}

// registrationRequest is the client metadata sent to a registration
// endpoint (RFC 7591 §2, OpenID Connect Registration application_type).
type registrationRequest struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

// registrationResponse is a registration endpoint's answer (RFC 7591 §3.2).
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret"`
	ClientSecretExpiresAt   int64    `json:"client_secret_expires_at"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	RedirectURIs            []string `json:"redirect_uris"`
	Error                   string   `json:"error"`
	ErrorDescription        string   `json:"error_description"`
}

// register runs Dynamic Client Registration at as.
func (t *Transport) register(ctx context.Context, as *serverMetadata) (*Registration, error) {
	ru, err := t.vet(ctx, as.RegistrationEndpoint, true)
	if err != nil {
		return nil, err
	}
	name := t.Client.ClientName
	if name == "" {
		name = defaultClientName
	}
	method := chooseAuthMethod(as.TokenEndpointAuthMethodsSupported, true, false)
	rr := registrationRequest{
		ClientName:              name,
		TokenEndpointAuthMethod: string(method),
		ApplicationType:         applicationType(t.Client.RedirectURL),
	}
	switch t.Grant {
	case GrantClientCredentials:
		rr.GrantTypes = []string{"client_credentials"}
		rr.ResponseTypes = []string{}
	case GrantJWTBearer:
		rr.GrantTypes = []string{jwtBearerGrant}
		rr.ResponseTypes = []string{}
	default:
		rr.GrantTypes = []string{"authorization_code", "refresh_token"}
		rr.ResponseTypes = []string{"code"}
		if t.Client.RedirectURL != "" {
			rr.RedirectURIs = []string{t.Client.RedirectURL}
		}
	}
	body, err := json.Marshal(rr)
	if err != nil {
		return nil, fmt.Errorf("oauth: registration request: %w", err)
	}
	lctx, cancel := t.legContext(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, ru.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("oauth: registration request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	t.logger().Debug("oauth: registering a client", "issuer", as.Issuer, "auth_method", method)
	resp, err := t.leg(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out registrationResponse
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the registration response: %w", err)
	}
	jerr := json.Unmarshal(raw, &out)
	if resp.StatusCode/100 != 2 {
		return nil, &TokenError{Endpoint: "registration", StatusCode: resp.StatusCode, Code: out.Error, Description: out.ErrorDescription}
	}
	if jerr != nil || out.ClientID == "" {
		return nil, fmt.Errorf("%w: registration response has no client_id", ErrBadMetadata)
	}
	r := &Registration{ClientID: out.ClientID, ClientSecret: out.ClientSecret, AuthMethod: method, RedirectURIs: out.RedirectURIs}
	if out.TokenEndpointAuthMethod != "" {
		r.AuthMethod = AuthMethod(out.TokenEndpointAuthMethod)
	}
	if r.ClientSecret == "" && (r.AuthMethod == AuthClientSecretBasic || r.AuthMethod == AuthClientSecretPost) {
		r.AuthMethod = AuthNone
	}
	if out.ClientSecretExpiresAt > 0 {
		r.SecretExpiresAt = time.Unix(out.ClientSecretExpiresAt, 0)
	}
	return r, nil
}

// applicationType is "native" for a loopback or custom-scheme redirect URI
// (or none), and "web" otherwise (SEP-837).
func applicationType(redirect string) string {
	u, err := url.Parse(redirect)
	if redirect == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || isLoopback(u.Hostname()) {
		return "native"
	}
	return "web"
}
