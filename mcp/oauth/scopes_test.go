package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestScopeSelection: the scope requested is the challenge's, else the
// resource's scopes_supported, else none; offline_access is added when
// the authorization server lists it, unless the client opts out.
func TestScopeSelection(t *testing.T) {
	tests := []struct {
		name        string
		challenge   []string
		supported   []string
		asSupported []string
		configured  []string
		noOffline   bool
		want        string
	}{
		{name: "from the challenge", challenge: []string{"mcp:read"}, supported: []string{"a", "b"}, want: "mcp:read"},
		{name: "from scopes_supported", supported: []string{"mcp:basic", "mcp:write"}, want: "mcp:basic mcp:write"},
		{name: "none", want: ""},
		{name: "offline_access added", challenge: []string{"mcp:read"}, asSupported: []string{"mcp:read", "offline_access"}, want: "mcp:read offline_access"},
		{name: "offline_access declined", challenge: []string{"mcp:read"}, asSupported: []string{"offline_access"}, noOffline: true, want: "mcp:read"},
		{name: "configured", challenge: []string{"mcp:read"}, configured: []string{"x", "y"}, want: "x y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newAuthServer(t)
			if tt.asSupported != nil {
				as.metadata = map[string]any{"scopes_supported": tt.asSupported}
			}
			rs := newResourceServer(t, as)
			rs.challengeScope, rs.scopesSupported = tt.challenge, tt.supported
			tr := newTransport()
			tr.Client.Scopes, tr.Client.NoOfflineAccess = tt.configured, tt.noOffline
			if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			ar := as.auths()
			if got := ar[0].Get("scope"); got != tt.want {
				t.Errorf("scope = %q, want %q", got, tt.want)
			}
			if tt.want == "" && ar[0].Has("scope") {
				t.Errorf("scope parameter sent empty; want it omitted")
			}
		})
	}
}

// TestStepUp: a 403 insufficient_scope re-authorizes for the union of the
// scopes granted before and the challenged ones (SEP-2350), and the
// request is retried with the new token.
func TestStepUp(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	rs.challengeScope = []string{"mcp:basic"}
	tr := newTransport()
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("first request: %d, %v", status, err)
	}
	rs.required = []string{"mcp:write"}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{"step":"up"}`); err != nil || status != http.StatusOK {
		t.Fatalf("step-up request: %d, %v", status, err)
	}
	ar := as.auths()
	if len(ar) != 2 {
		t.Fatalf("authorization requests = %d, want 2", len(ar))
	}
	if got := ar[1].Get("scope"); got != "mcp:basic mcp:write" {
		t.Errorf("step-up scope = %q, want the union %q", got, "mcp:basic mcp:write")
	}
}

// TestStepUpLimit: a server that keeps answering insufficient_scope gets
// MaxStepUps re-authorizations for one request, then ErrStepUpLimit.
func TestStepUpLimit(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	rs.required = []string{"never-granted"}
	tr := newTransport()
	// The user never grants the scope the server insists on.
	tr.Authorize = func(ctx context.Context, u string) (url.Values, error) {
		return followRedirect(ctx, stripScope(u, "never-granted"))
	}
	_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrStepUpLimit) {
		t.Fatalf("err = %v, want ErrStepUpLimit", err)
	}
	// One authorization for the 401, then MaxStepUps (2) step-ups.
	if got := len(as.auths()); got != 3 {
		t.Errorf("authorization requests = %d, want 3", got)
	}
}
