package catalogue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp/oauth"
)

// OAuthSetup is what the OAuth client of a server with auth: oauth is
// built from ([NewOAuthTransport]).
type OAuthSetup struct {
	// Egress is what the server's egress shares with every other: Audit,
	// Secrets, Logger, AllowedHosts, Resolver, Dial, TLS. Required: every
	// request, the MCP ones and the OAuth legs, goes through egress.
	Egress egress.Config
	// Vault keeps the tokens and client registrations. Required.
	Vault OAuthVault
	// Authorize shows the user the authorization URL and returns what the
	// authorization server sent to RedirectURL. Nil means non-interactive,
	// as the runtime is: a server that needs a login fails with an error
	// matching [ErrNeedsLogin].
	Authorize func(ctx context.Context, authURL string) (url.Values, error)
	// RedirectURL is the redirect URI of the authorization code grant.
	RedirectURL string
	// Logger receives the OAuth client's debug lines, never a token. Nil
	// means Egress.Logger.
	Logger *slog.Logger
}

// ErrNeedsLogin reports a call to a server with auth: oauth for which no
// token is stored, or whose token can no longer be refreshed: an operator
// must run `andon auth login NAME` (or Connect in the console). It is
// matched with errors.Is; the error also matches
// *oauth.AuthorizationRequiredError with errors.As.
var ErrNeedsLogin = errors.New("needs a login")

// NeedsLoginError is a server's [ErrNeedsLogin].
type NeedsLoginError struct {
	Server string
	Err    error
}

// Error names the server and the command that logs in to it.
func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("server %q needs `andon auth login %s`", e.Server, e.Server)
}

// Unwrap returns [ErrNeedsLogin] and the OAuth client's error, so that
// both errors.Is(err, ErrNeedsLogin) and errors.As to
// *oauth.AuthorizationRequiredError work.
func (e *NeedsLoginError) Unwrap() []error { return []error{ErrNeedsLogin, e.Err} }

// needsLogin wraps err in a [*NeedsLoginError] if it says that the server
// needs a user's authorization.
func needsLogin(server string, err error) error {
	if are := (*oauth.AuthorizationRequiredError)(nil); errors.As(err, &are) && !errors.Is(err, ErrNeedsLogin) {
		return &NeedsLoginError{Server: server, Err: err}
	}
	return err
}

// NewOAuthTransport returns the OAuth client of s, a server with auth:
// oauth, over two egress transports: one for the MCP endpoint (no
// credential: the OAuth client places the token), and one for every OAuth
// leg — the metadata, the registration and the token requests — with
// Purpose "oauth NAME", any host allowed (the authorization server comes
// from metadata) but every address vetted as always, and the
// client_credentials secret, if any, for its hosts. Every URL that
// metadata supplies is vetted by egress's guard before the client reads a
// secret for it (oauth.Transport.CheckURL is egress's Vet). A token
// request is one oauth_token audit row.
func NewOAuthTransport(ctx context.Context, s Server, o *OAuthSetup) (*oauth.Transport, error) {
	if s.Auth != AuthOAuth {
		return nil, fmt.Errorf("catalogue: server %q does not have auth: oauth", s.Name)
	}
	if o == nil || o.Vault == nil || o.Egress.Audit == nil {
		return nil, fmt.Errorf("catalogue: server %q: OAuth needs a vault and an audit log", s.Name)
	}
	endpoint, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("catalogue: server %q: invalid url", s.Name) // the text may hold a secret
	}
	store, err := newTokenStore(o.Vault, s)
	if err != nil {
		return nil, err
	}
	mcpCfg := o.Egress
	mcpCfg.Purpose = "mcp " + s.Name
	mcpCfg.AllowedHosts = append(slices.Clone(o.Egress.AllowedHosts), endpoint.Hostname())
	mcpCfg.MaxResponseBytes = -1 // the MCP client caps messages itself
	mcpCfg.Credential, mcpCfg.Secrets = "", nil
	mcpRT, err := egress.NewTransport(ctx, &mcpCfg)
	if err != nil {
		return nil, fmt.Errorf("catalogue: server %q: %w", s.Name, err)
	}
	legCfg := o.Egress
	legCfg.Purpose = "oauth " + s.Name
	legCfg.AllowedHosts = append(slices.Clone(o.Egress.AllowedHosts), endpoint.Hostname(), "*")
	legCfg.Credential = s.ClientCredentials
	if s.ClientCredentials == "" {
		legCfg.Secrets = nil
	}
	legRT, err := egress.NewTransport(ctx, &legCfg)
	if err != nil {
		return nil, fmt.Errorf("catalogue: server %q: %w", s.Name, err)
	}
	logger := o.Logger
	if logger == nil {
		logger = o.Egress.Logger
	}
	t := &oauth.Transport{
		Base:      &oauthRouter{endpoint: endpoint, mcp: mcpRT, legs: legRT},
		Store:     store,
		Authorize: o.Authorize,
		CheckURL:  legRT.Vet,
		Logger:    logger,
		Client: oauth.ClientConfig{
			ClientID:    s.ClientID,
			ClientName:  "andon",
			RedirectURL: o.RedirectURL,
			Scopes:      slices.Clone(s.Scopes),
		},
	}
	if s.ClientCredentials != "" {
		// egress puts the secret on the token request, as basic
		// authentication; the OAuth client never holds it.
		t.Grant = oauth.GrantClientCredentials
		t.Client.AuthMethod = oauth.AuthClientSecretBasic
	}
	return t, nil
}

// maxLegBody bounds the body of an OAuth leg that the router reads: a
// token request's form, a metadata document.
const maxLegBody = 1 << 20

// oauthRouter is the Base of a server's OAuth client: the requests to the
// MCP endpoint go to the MCP egress transport, every OAuth leg to the
// legs' one. It learns each authorization server's token endpoint from
// its metadata, so that a token request's audit row names its issuer and
// grant type.
type oauthRouter struct {
	endpoint  *url.URL
	mcp, legs http.RoundTripper

	mu      sync.Mutex
	issuers map[string]string // token endpoint (no query) → issuer
}

func (r *oauthRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if !r.isLeg(req) {
		return r.mcp.RoundTrip(req)
	}
	if req.Method == http.MethodGet && isServerMetadata(req.URL.Path) {
		return r.metadata(req)
	}
	if req.Method == http.MethodPost && isForm(req) && req.Body != nil {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxLegBody))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("catalogue: reading an OAuth request: %w", err)
		}
		form, _ := url.ParseQuery(string(body))
		if grant := form.Get("grant_type"); grant != "" {
			r.mu.Lock()
			issuer := r.issuers[withoutQuery(req.URL)]
			r.mu.Unlock()
			req = req.WithContext(egress.WithTokenLeg(req.Context(), egress.TokenLeg{Issuer: issuer, GrantType: grant}))
		}
		clear(form) // holds a code, a refresh token or a secret
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	return r.legs.RoundTrip(req)
}

// isLeg tells an OAuth leg from an MCP request: another host, a
// well-known document, or a form (only token requests are forms).
func (r *oauthRouter) isLeg(req *http.Request) bool {
	if !strings.EqualFold(req.URL.Host, r.endpoint.Host) || !strings.EqualFold(req.URL.Scheme, r.endpoint.Scheme) {
		return true
	}
	return strings.Contains(req.URL.Path, "/.well-known/") || isForm(req)
}

func isForm(req *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded"
}

func isServerMetadata(path string) bool {
	return strings.Contains(path, "/.well-known/oauth-authorization-server") || strings.Contains(path, "/.well-known/openid-configuration")
}

func withoutQuery(u *url.URL) string {
	return (&url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path}).String()
}

// metadata sends an authorization server metadata request and notes the
// token endpoint its answer names.
func (r *oauthRouter) metadata(req *http.Request) (*http.Response, error) {
	resp, err := r.legs.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLegBody))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var md struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if json.Unmarshal(body, &md) == nil && md.Issuer != "" {
		if tu, err := url.Parse(md.TokenEndpoint); err == nil && tu.Host != "" {
			r.mu.Lock()
			if r.issuers == nil {
				r.issuers = map[string]string{}
			}
			r.issuers[withoutQuery(tu)] = md.Issuer
			r.mu.Unlock()
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}
