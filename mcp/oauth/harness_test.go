package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// authServer is a loopback OAuth authorization server for the tests. Its
// authorization endpoint answers at once with a redirect carrying a code,
// as if a user had approved; everything it is sent is recorded.
type authServer struct {
	*httptest.Server
	t testing.TB

	// Configuration, set before the first request.
	metadataPath string         // default /.well-known/oauth-authorization-server
	issuerPath   string         // the issuer identifier's path, if any
	metadata     map[string]any // fields added to (or, with nil values, removed from) the metadata
	issMode      string         // "" correct, "omit", "wrong"
	noRefresh    bool           // issue no refresh tokens
	expiresIn    int            // default 3600
	// regMethod is the token_endpoint_auth_method DCR answers with (""
	// echoes the request's).
	regMethod string
	// badAssertion is a JWT bearer assertion the token endpoint rejects.
	badAssertion string
	// idPrefix starts the client_ids DCR issues (default "client-").
	idPrefix string
	// tokenGate, if set, holds every token request until it is closed or
	// the request is abandoned.
	tokenGate chan struct{}
	// tokenError, if set, is the error every token request gets.
	tokenError map[string]string

	mu            sync.Mutex
	gets          []string // paths of GET requests
	registrations []map[string]any
	authRequests  []url.Values
	tokenRequests []tokenRequest
	abandoned     int               // token requests whose client went away while held
	clients       map[string]string // client_id → secret
	codes         map[string]codeGrant
	access        map[string][]string // access token → scopes
	refresh       map[string][]string // refresh token → scopes
	n             int
}

// tokenRequest is one request the token endpoint received.
type tokenRequest struct {
	Form                 url.Values
	BasicUser, BasicPass string
	HasBasic             bool
	Grant                string
}

type codeGrant struct {
	challenge, resource, clientID string
	scopes                        []string
}

func newAuthServer(t testing.TB) *authServer {
	as := &authServer{t: t, clients: map[string]string{}, codes: map[string]codeGrant{}, access: map[string][]string{}, refresh: map[string][]string{}}
	as.Server = httptest.NewServer(http.HandlerFunc(as.serve))
	t.Cleanup(as.Close)
	return as
}

func (as *authServer) issuer() string { return as.URL + as.issuerPath }

func (as *authServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		as.mu.Lock()
		as.gets = append(as.gets, r.URL.Path)
		as.mu.Unlock()
	}
	mdPath := as.metadataPath
	if mdPath == "" {
		mdPath = "/.well-known/oauth-authorization-server"
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == mdPath:
		as.serveMetadata(w)
	case r.Method == http.MethodGet && r.URL.Path == "/authorize":
		as.serveAuthorize(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		as.serveToken(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/register":
		as.serveRegister(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (as *authServer) serveMetadata(w http.ResponseWriter) {
	md := map[string]any{
		"issuer":                                         as.issuer(),
		"authorization_endpoint":                         as.URL + "/authorize",
		"token_endpoint":                                 as.URL + "/token",
		"registration_endpoint":                          as.URL + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post", "none"},
		"authorization_response_iss_parameter_supported": true,
	}
	for k, v := range as.metadata {
		if v == nil {
			delete(md, k)
		} else {
			md[k] = v
		}
	}
	writeJSON(w, http.StatusOK, md)
}

func (as *authServer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.authRequests = append(as.authRequests, q)
	as.n++
	code := fmt.Sprintf("code-%d-SECRETCODE", as.n)
	as.codes[code] = codeGrant{challenge: q.Get("code_challenge"), resource: q.Get("resource"), clientID: q.Get("client_id"), scopes: strings.Fields(q.Get("scope"))}
	as.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("redirect_uri") == "" {
		http.Error(w, "no redirect_uri", http.StatusBadRequest)
		return
	}
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	switch as.issMode {
	case "":
		v.Set("iss", as.issuer())
	case "wrong":
		v.Set("iss", "https://evil.example.com")
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (as *authServer) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tr := tokenRequest{Form: r.PostForm, Grant: r.PostForm.Get("grant_type")}
	tr.BasicUser, tr.BasicPass, tr.HasBasic = r.BasicAuth()
	as.mu.Lock()
	as.tokenRequests = append(as.tokenRequests, tr)
	gate := as.tokenGate
	as.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			as.mu.Lock()
			as.abandoned++
			as.mu.Unlock()
			return
		}
	}
	if as.tokenError != nil {
		writeJSON(w, http.StatusBadRequest, as.tokenError)
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	var scopes []string
	switch tr.Grant {
	case "authorization_code":
		g, ok := as.codes[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.codes, r.PostForm.Get("code"))
		scopes = g.scopes
	case "refresh_token":
		s, ok := as.refresh[r.PostForm.Get("refresh_token")]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.refresh, r.PostForm.Get("refresh_token"))
		scopes = s
	case "client_credentials":
		scopes = strings.Fields(r.PostForm.Get("scope"))
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if a := r.PostForm.Get("assertion"); a == "" || a == as.badAssertion {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		scopes = strings.Fields(r.PostForm.Get("scope"))
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	as.n++
	resp := map[string]any{"access_token": fmt.Sprintf("at-%d-SECRETTOKEN", as.n), "token_type": "Bearer"}
	as.access[resp["access_token"].(string)] = scopes
	exp := as.expiresIn
	if exp == 0 {
		exp = 3600
	}
	resp["expires_in"] = exp
	if !as.noRefresh && (tr.Grant == "authorization_code" || tr.Grant == "refresh_token") {
		rt := fmt.Sprintf("rt-%d-SECRETREFRESH", as.n)
		as.refresh[rt] = scopes
		resp["refresh_token"] = rt
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	writeJSON(w, http.StatusOK, resp)
}

func (as *authServer) serveRegister(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.registrations = append(as.registrations, req)
	as.n++
	prefix := as.idPrefix
	if prefix == "" {
		prefix = "client-"
	}
	id := fmt.Sprintf("%s%d", prefix, as.n)
	secret := fmt.Sprintf("secret-%d-SECRETCLIENT", as.n)
	as.clients[id] = secret
	method, _ := req["token_endpoint_auth_method"].(string)
	if as.regMethod != "" {
		method = as.regMethod
	}
	out := map[string]any{"client_id": id, "token_endpoint_auth_method": method}
	if method != "none" {
		out["client_secret"] = secret
	}
	writeJSON(w, http.StatusCreated, out)
}

// valid reports whether tok is an access token this server issued, and
// its scopes.
func (as *authServer) valid(tok string) ([]string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	s, ok := as.access[tok]
	return s, ok
}

// revoke makes every access token issued so far invalid.
func (as *authServer) revoke() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.access)
}

func (as *authServer) tokens() []tokenRequest {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.tokenRequests)
}

func (as *authServer) auths() []url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.authRequests)
}

func (as *authServer) regs() []map[string]any {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.registrations)
}

func (as *authServer) getPaths() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.gets)
}

// resourceServer is a loopback protected resource (an MCP endpoint
// stand-in at /mcp): it answers 200 with the request body echoed to a
// valid bearer token that has the required scopes, and 401 or 403 with a
// challenge otherwise.
type resourceServer struct {
	*httptest.Server
	as *authServer

	// Configuration.
	prmPath         string   // default /.well-known/oauth-protected-resource/mcp; "-" for none
	inHeader        bool     // name the PRM URL in WWW-Authenticate
	challengeScope  []string // scope in the 401 challenge
	required        []string // scopes every request needs (403 insufficient_scope otherwise)
	scopesSupported []string
	prm             map[string]any // fields overriding the PRM document

	mu     sync.Mutex
	bodies []string // bodies of the requests to /mcp, in order
	auths  []string // their Authorization headers
}

func newResourceServer(t testing.TB, as *authServer) *resourceServer {
	rs := &resourceServer{as: as, inHeader: true}
	rs.Server = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *resourceServer) mcpURL() string { return rs.URL + "/mcp" }

func (rs *resourceServer) prmURL() string {
	p := rs.prmPath
	if p == "" {
		p = "/.well-known/oauth-protected-resource/mcp"
	}
	return rs.URL + p
}

func (rs *resourceServer) serve(w http.ResponseWriter, r *http.Request) {
	p := rs.prmPath
	if p == "" {
		p = "/.well-known/oauth-protected-resource/mcp"
	}
	if r.Method == http.MethodGet && r.URL.Path == p && p != "-" {
		doc := map[string]any{"resource": rs.mcpURL(), "authorization_servers": []string{rs.as.issuer()}}
		if rs.scopesSupported != nil {
			doc["scopes_supported"] = rs.scopesSupported
		}
		for k, v := range rs.prm {
			doc[k] = v
		}
		writeJSON(w, http.StatusOK, doc)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	rs.mu.Lock()
	rs.bodies = append(rs.bodies, string(body))
	rs.auths = append(rs.auths, r.Header.Get("Authorization"))
	rs.mu.Unlock()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	scopes, valid := rs.as.valid(tok)
	if !ok || !valid {
		rs.challenge(w, http.StatusUnauthorized, "invalid_token", rs.challengeScope)
		return
	}
	var missing []string
	for _, s := range rs.required {
		if !slices.Contains(scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		rs.challenge(w, http.StatusForbidden, "insufficient_scope", missing)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (rs *resourceServer) challenge(w http.ResponseWriter, status int, errCode string, scopes []string) {
	parts := []string{fmt.Sprintf("error=%q", errCode)}
	if rs.inHeader && rs.prmPath != "-" {
		parts = append(parts, fmt.Sprintf("resource_metadata=%q", rs.prmURL()))
	}
	if len(scopes) > 0 {
		parts = append(parts, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(parts, ", "))
	writeJSON(w, status, map[string]string{"error": errCode})
}

func (rs *resourceServer) seen() (bodies, auths []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.bodies), slices.Clone(rs.auths)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// followRedirect is an Authorize hook that plays the user: it GETs the
// authorization URL and returns the query of the redirect it answers with.
func followRedirect(ctx context.Context, authURL string) (url.Values, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	return u.Query(), nil
}

// newTransport is a Transport for the tests: DCR, a loopback redirect URI
// nobody listens on (followRedirect reads the code from the redirect).
func newTransport() *oauth.Transport {
	return &oauth.Transport{
		Store:     oauth.NewMemoryStore(),
		Authorize: followRedirect,
		Client:    oauth.ClientConfig{RedirectURL: "http://127.0.0.1:9/callback"},
	}
}

// post sends body to u through rt and returns the status and body.
func post(t *testing.T, ctx context.Context, rt http.RoundTripper, u, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// stripScope removes scope s from the authorization URL u, as a user who
// declines to grant it would.
func stripScope(u, s string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := pu.Query()
	var keep []string
	for _, x := range strings.Fields(q.Get("scope")) {
		if x != s {
			keep = append(keep, x)
		}
	}
	q.Set("scope", strings.Join(keep, " "))
	pu.RawQuery = q.Encode()
	return pu.String()
}
