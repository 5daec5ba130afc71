package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestDiscoveryOrder: without resource_metadata in the challenge, the
// Protected Resource Metadata is looked for at the path-aware well-known
// URL, then the root one; the authorization server's metadata at the URLs
// RFC 8414 and OpenID discovery give for its issuer, in the spec's order.
func TestDiscoveryOrder(t *testing.T) {
	tests := []struct {
		name     string
		prmPath  string
		inHeader bool
		mdPath   string
		issPath  string // the issuer's path
		wantPRM  []string
		wantAS   []string
	}{
		{
			name: "challenge names PRM", prmPath: "/custom/prm.json", inHeader: true,
			mdPath:  "/.well-known/oauth-authorization-server",
			wantPRM: []string{"/custom/prm.json"}, wantAS: []string{"/.well-known/oauth-authorization-server"},
		},
		{
			name: "path-aware PRM, OpenID", prmPath: "/.well-known/oauth-protected-resource/mcp",
			mdPath:  "/.well-known/openid-configuration",
			wantPRM: []string{"/.well-known/oauth-protected-resource/mcp"},
			wantAS:  []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"},
		},
		{
			name: "root PRM, issuer with a path", prmPath: "/.well-known/oauth-protected-resource",
			mdPath: "/.well-known/oauth-authorization-server/tenant1", issPath: "/tenant1",
			wantPRM: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"},
			wantAS:  []string{"/.well-known/oauth-authorization-server/tenant1"},
		},
		{
			name: "issuer with a path, OpenID under it", prmPath: "/.well-known/oauth-protected-resource/mcp",
			mdPath: "/tenant1/.well-known/openid-configuration", issPath: "/tenant1",
			wantPRM: []string{"/.well-known/oauth-protected-resource/mcp"},
			wantAS: []string{
				"/.well-known/oauth-authorization-server/tenant1",
				"/.well-known/openid-configuration/tenant1",
				"/tenant1/.well-known/openid-configuration",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newAuthServer(t)
			as.metadataPath = tt.mdPath
			rs := newResourceServer(t, as)
			rs.prmPath, rs.inHeader = tt.prmPath, tt.inHeader
			if tt.issPath != "" {
				as.issuerPath = tt.issPath
			}
			if tt.prmPath == "/.well-known/oauth-protected-resource" {
				if rs.prm == nil {
					rs.prm = map[string]any{}
				}
				rs.prm["resource"] = rs.URL
			}
			prmSeen := recordGets(rs)
			status, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
			if err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			if got := *prmSeen; !slices.Equal(got, tt.wantPRM) {
				t.Errorf("PRM GETs = %q, want %q", got, tt.wantPRM)
			}
			if got := as.getPaths(); !slices.Equal(got[:len(tt.wantAS)], tt.wantAS) {
				t.Errorf("AS metadata GETs = %q, want %q first", got, tt.wantAS)
			}
		})
	}
}

// recordGets wraps rs's handler to record the paths of its GETs.
func recordGets(rs *resourceServer) *[]string {
	var paths []string
	h := rs.Config.Handler
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			rs.mu.Lock()
			paths = append(paths, r.URL.Path)
			rs.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
	return &paths
}

// TestResourceMismatchRefused: Protected Resource Metadata naming another
// resource is refused before anything is sent to its authorization server.
func TestResourceMismatchRefused(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	rs.prm = map[string]any{"resource": "https://evil.example.com/mcp"}
	_, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrResourceMismatch) {
		t.Fatalf("err = %v, want ErrResourceMismatch", err)
	}
	if len(as.getPaths()) != 0 {
		t.Errorf("the authorization server saw GETs %q, want none", as.getPaths())
	}
}

// TestIssuerMismatchRefused: authorization server metadata whose issuer is
// not the one its URL was built from is refused (RFC 8414 §3.3): none of
// its endpoints is used.
func TestIssuerMismatchRefused(t *testing.T) {
	as := newAuthServer(t)
	as.metadata = map[string]any{"issuer": "https://attacker.example.com"}
	rs := newResourceServer(t, as)
	_, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrIssuerMismatch) {
		t.Fatalf("err = %v, want ErrIssuerMismatch", err)
	}
	if len(as.regs()) != 0 || len(as.auths()) != 0 || len(as.tokens()) != 0 {
		t.Errorf("the mismatched metadata's endpoints were used")
	}
}

// TestFallback20250326: a server without Protected Resource Metadata is its
// own authorization server; without metadata its endpoints are /authorize,
// /token and /register at its origin.
func TestFallback20250326(t *testing.T) {
	as := newAuthServer(t)
	as.metadataPath = "/none"
	// The resource server is the authorization server: one origin.
	rs := &resourceServer{as: as, prmPath: "-"}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) { rs.serve(w, r) })
	mux.HandleFunc("/", as.serve)
	as.Config.Handler = mux
	rs.Server = as.Server
	status, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
	if err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	if len(as.regs()) != 1 || len(as.auths()) != 1 || len(as.tokens()) != 1 {
		t.Errorf("fallback endpoints: %d registrations, %d authorizations, %d token requests, want 1 each", len(as.regs()), len(as.auths()), len(as.tokens()))
	}
	if got := as.auths()[0].Get("resource"); got != rs.mcpURL() {
		t.Errorf("resource = %q, want the canonical server URI %q", got, rs.mcpURL())
	}
}
