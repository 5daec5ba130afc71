package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/andonhq/andon/mcp/oauth"
)

// The client metadata the auth scenarios expect: the suite's fixed Client
// ID Metadata Document URL (which the test authorization server accepts
// without fetching it) and a redirect URI nothing listens on (the program
// reads the code from the redirect's Location instead).
const (
	cimdURL     = "https://conformance-test.local/client-metadata.json"
	redirectURL = "http://localhost:3000/callback"
)

// clientCredentialsPrefix starts the scenarios of the client credentials
// extension (SEP-1046), in which no user takes part.
const clientCredentialsPrefix = "auth/client-credentials-"

// playAuth plays an OAuth scenario as andon meets such a server: connect
// through an [oauth.Transport], list the tools and call test-tool. The
// server answers 401; the Transport discovers, registers, authorizes and
// retries. The user's part, following the authorization server's
// redirect, is authorizeByRedirect. The scenario's context may carry a
// pre-registered client (client_id, client_secret) or, for the JWT
// variant of client credentials, a private key (private_key_pem), or a
// workload identity token (valid_jwt), or an enterprise IdP's ID token and
// token endpoint (idp_id_token, idp_token_endpoint).
func playAuth(ctx context.Context, e *env) error {
	t, err := e.oauthTransport()
	if err != nil {
		return err
	}
	c, err := e.connectWith(ctx, &http.Client{Transport: t}, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := e.callTool(ctx, c, "test-tool", map[string]any{}); err != nil {
		return err
	}
	return nil
}

// oauthTransport configures the Transport for the scenario.
func (e *env) oauthTransport() (*oauth.Transport, error) {
	t := &oauth.Transport{
		Store:     oauth.NewMemoryStore(),
		Logger:    e.logger,
		Authorize: authorizeByRedirect,
		Client: oauth.ClientConfig{
			ClientName:          programName,
			RedirectURL:         redirectURL,
			ClientIDMetadataURL: cimdURL,
		},
	}
	t.Client.ClientID, _ = e.context["client_id"].(string)
	t.Client.ClientSecret, _ = e.context["client_secret"].(string)
	if pemKey, _ := e.context["private_key_pem"].(string); pemKey != "" {
		key, err := parsePrivateKey(pemKey)
		if err != nil {
			return nil, fmt.Errorf("%s: private_key_pem: %w", envContext, err)
		}
		t.Client.PrivateKey = key
		t.Client.AuthMethod = oauth.AuthPrivateKeyJWT
	}
	if strings.HasPrefix(e.scenario, clientCredentialsPrefix) {
		t.Grant = oauth.GrantClientCredentials
	}
	// Workload identity (SEP-1933): the platform's signed identity token,
	// here the one the scenario minted, is the JWT bearer assertion.
	if jwt, _ := e.context["valid_jwt"].(string); jwt != "" {
		t.Grant = oauth.GrantJWTBearer
		t.Client.Assertion = func(context.Context, string, string) (string, error) { return jwt, nil }
	}
	// Enterprise-managed authorization (SEP-990): the user's ID token from
	// the enterprise IdP is exchanged there for an ID-JAG, the assertion.
	if idp, _ := e.context["idp_token_endpoint"].(string); idp != "" {
		idToken, _ := e.context["idp_id_token"].(string)
		idpClient, _ := e.context["idp_client_id"].(string)
		t.Grant = oauth.GrantJWTBearer
		t.Client.Assertion = (&oauth.IDJAG{
			TokenEndpoint: idp,
			ClientID:      idpClient,
			IDToken:       func(context.Context) (string, error) { return idToken, nil },
		}).Assertion
	}
	return t, nil
}

// parsePrivateKey reads a PKCS #8 (or SEC 1 EC) PEM private key.
func parsePrivateKey(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("key type %T cannot sign", k)
		}
		return signer, nil
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// authorizeByRedirect plays the user: it GETs the authorization URL, which
// the suite's authorization server answers at once with a redirect to the
// redirect URI, and returns that redirect's query (code, state, iss).
func authorizeByRedirect(ctx context.Context, authURL string) (url.Values, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %s without a redirect", resp.Status)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("the authorization redirect is not a URL: %w", err)
	}
	return u.Query(), nil
}
