package oauthtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp/mcptest"
)

// The outcomes the resource server logs for a request to its MCP endpoint.
const (
	OutcomeOK                = "ok"
	OutcomeNoToken           = "no_token"
	OutcomeInvalidToken      = "invalid_token"
	OutcomeWrongAudience     = "wrong_audience"
	OutcomeExpired           = "expired"
	OutcomeInsufficientScope = "insufficient_scope"
)

// RSConfig configures a [ResourceServer].
type RSConfig struct {
	// Scopes are the scopes it advertises (scopes_supported). The first
	// is needed for every request, and is named in a 401's challenge.
	// Nil means mcp:read and mcp:write.
	Scopes []string
	// ToolScopes names, by tool, a scope a tools/call needs besides the
	// first: without it the call is answered 403 insufficient_scope,
	// naming every scope the call needs (step-up).
	ToolScopes map[string]string
	// MCP is the server behind the check. Nil means a new mcptest server.
	MCP *mcptest.Server
	// HTTP configures the MCP handler.
	HTTP *mcptest.HTTPOptions
}

// RSEntry is what the resource server saw of one request: never the token,
// only the first 12 hex digits of its SHA-256.
type RSEntry struct {
	Method    string
	RPCMethod string
	Tool      string
	Outcome   string
	Scopes    []string
	TokenHash string
}

// ResourceServer is an MCP server on 127.0.0.1 behind a check of the JWT
// access tokens an [AS] issues: issuer, audience (the resource), expiry,
// signature (RS256, keys from the issuer's JWKS) and scopes. It answers 401
// with a WWW-Authenticate challenge naming its protected resource metadata
// (RFC 9728), and 403 insufficient_scope for a tool that needs more.
type ResourceServer struct {
	// URL is the MCP endpoint, which is also the resource indicator.
	URL string
	// MetadataURL is its protected resource metadata document.
	MetadataURL string
	// MCP is the server behind the check.
	MCP *mcptest.Server

	srv    *httptest.Server
	cfg    RSConfig
	issuer string

	mu      sync.Mutex
	log     []RSEntry
	tokens  []string
	revoked map[string]bool
	keys    map[string]*rsa.PublicKey
}

// RevokeSeen makes every token the server has been sent so far invalid:
// a request that carries one is answered 401 invalid_token, as a server
// answers a token its authorization server revoked.
func (rs *ResourceServer) RevokeSeen() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.revoked == nil {
		rs.revoked = map[string]bool{}
	}
	for _, tok := range rs.tokens {
		rs.revoked[tok] = true
	}
}

// Count returns how many requests so far had outcome.
func (rs *ResourceServer) Count(outcome string) int {
	n := 0
	for _, e := range rs.Log() {
		if e.Outcome == outcome {
			n++
		}
	}
	return n
}

// NewResourceServer returns a resource server that is listening but not yet
// serving, so that its URL can be given to the [AS] before it starts; call
// [ResourceServer.Start] with the issuer next. It is closed when the test
// ends.
func NewResourceServer(t testing.TB, cfg *RSConfig) *ResourceServer {
	t.Helper()
	rs := &ResourceServer{keys: map[string]*rsa.PublicKey{}}
	if cfg != nil {
		rs.cfg = *cfg
	}
	if rs.cfg.Scopes == nil {
		rs.cfg.Scopes = []string{"mcp:read", "mcp:write"}
	}
	if rs.cfg.MCP == nil {
		rs.cfg.MCP = mcptest.NewServer(nil)
		t.Cleanup(rs.cfg.MCP.Close)
	}
	rs.MCP = rs.cfg.MCP
	rs.srv = httptest.NewUnstartedServer(nil)
	t.Cleanup(rs.srv.Close)
	base := "http://" + rs.srv.Listener.Addr().String()
	rs.URL = base + "/mcp"
	rs.MetadataURL = base + "/.well-known/oauth-protected-resource/mcp"
	return rs
}

// Start serves, trusting tokens of issuer.
func (rs *ResourceServer) Start(issuer string) {
	rs.issuer = issuer
	mcpHandler := rs.MCP.HTTPHandler(rs.cfg.HTTP)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", rs.serveMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", rs.serveMetadata)
	mux.Handle("/mcp", rs.guard(mcpHandler))
	rs.srv.Config.Handler = mux
	rs.srv.Start()
}

// Resource is the resource as the [AS] is to know it.
func (rs *ResourceServer) Resource() Resource {
	return Resource{Resource: rs.URL, Scopes: rs.cfg.Scopes}
}

// Log returns what the server saw so far, in order.
func (rs *ResourceServer) Log() []RSEntry {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.log)
}

// Tokens returns every bearer token the server was sent, so that a test can
// check that none of them appears anywhere it must not. Never print them.
func (rs *ResourceServer) Tokens() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.tokens)
}

func (rs *ResourceServer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"resource":                 rs.URL,
		"authorization_servers":    []string{rs.issuer},
		"scopes_supported":         rs.cfg.Scopes,
		"bearer_methods_supported": []string{"header"},
	})
}

func (rs *ResourceServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := RSEntry{Method: r.Method}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &m)
			e.RPCMethod = m.Method
			if m.Method == "tools/call" {
				e.Tool = m.Params.Name
			}
		}
		need := []string{rs.cfg.Scopes[0]}
		if s, ok := rs.cfg.ToolScopes[e.Tool]; ok && e.Tool != "" {
			need = append(need, s)
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			e.Outcome = OutcomeNoToken
			rs.record(e, "")
			rs.challenge(w, http.StatusUnauthorized, "", need)
			return
		}
		sum := sha256.Sum256([]byte(token))
		e.TokenHash = fmt.Sprintf("%x", sum[:6])
		claims, outcome := rs.verify(r.Context(), token)
		rs.mu.Lock()
		if rs.revoked[token] {
			outcome = OutcomeInvalidToken
		}
		rs.mu.Unlock()
		e.Scopes = strings.Fields(claims.Scope)
		if outcome == OutcomeOK {
			for _, s := range need {
				if !slices.Contains(e.Scopes, s) {
					outcome = OutcomeInsufficientScope
				}
			}
		}
		e.Outcome = outcome
		rs.record(e, token)
		switch outcome {
		case OutcomeOK:
			next.ServeHTTP(w, r)
		case OutcomeInsufficientScope:
			rs.challenge(w, http.StatusForbidden, "insufficient_scope", need)
		default:
			rs.challenge(w, http.StatusUnauthorized, "invalid_token", need)
		}
	})
}

func (rs *ResourceServer) record(e RSEntry, token string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.log = append(rs.log, e)
	if token != "" && !slices.Contains(rs.tokens, token) {
		rs.tokens = append(rs.tokens, token)
	}
}

func (rs *ResourceServer) challenge(w http.ResponseWriter, status int, errCode string, scopes []string) {
	v := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, rs.MetadataURL, strings.Join(scopes, " "))
	if errCode != "" {
		v += fmt.Sprintf(`, error=%q`, errCode)
	}
	w.Header().Set("WWW-Authenticate", v)
	http.Error(w, http.StatusText(status), status)
}

type claims struct {
	Iss   string `json:"iss"`
	Aud   any    `json:"aud"`
	Exp   int64  `json:"exp"`
	Scope string `json:"scope"`
}

// verify checks a JWT access token and returns its claims and the outcome.
func (rs *ResourceServer) verify(ctx context.Context, token string) (claims, string) {
	var c claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, OutcomeInvalidToken
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if decodeSegment(parts[0], &header) != nil || header.Alg != "RS256" {
		return c, OutcomeInvalidToken
	}
	key, err := rs.key(ctx, header.Kid)
	if err != nil {
		return c, OutcomeInvalidToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, OutcomeInvalidToken
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) != nil {
		return c, OutcomeInvalidToken
	}
	if decodeSegment(parts[1], &c) != nil || c.Iss != rs.issuer {
		return c, OutcomeInvalidToken
	}
	if !audienceHas(c.Aud, rs.URL) {
		return c, OutcomeWrongAudience
	}
	if time.Now().Unix() >= c.Exp {
		return c, OutcomeExpired
	}
	return c, OutcomeOK
}

func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// key returns the issuer's signing key kid, fetching its JWKS when the key
// is not known yet.
func (rs *ResourceServer) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	rs.mu.Lock()
	k := rs.keys[kid]
	rs.mu.Unlock()
	if k != nil {
		return k, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rs.issuer+"/jwks", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kty, Kid, N, E string
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, jk := range set.Keys {
		if jk.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(jk.N)
		e, err2 := base64.RawURLEncoding.DecodeString(jk.E)
		if err1 != nil || err2 != nil {
			continue
		}
		rs.keys[jk.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if k := rs.keys[kid]; k != nil {
		return k, nil
	}
	return nil, errors.New("oauthtest: unknown signing key")
}
