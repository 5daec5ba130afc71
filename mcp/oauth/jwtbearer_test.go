package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestJWTBearer: the JWT bearer grant (workload identity, SEP-1933) sends
// the assertion the source gives for this issuer and resource, with the
// resource parameter and the client_id of a public client; a rejected
// assertion is an error, with no retry and no other grant tried.
func TestJWTBearer(t *testing.T) {
	as := newAuthServer(t)
	as.badAssertion = "expired-assertion"
	as.metadata = map[string]any{"token_endpoint_auth_methods_supported": []string{"none"}, "registration_endpoint": nil}
	rs := newResourceServer(t, as)
	var gotIssuer, gotResource string
	assertion := "workload-assertion"
	tr := &oauth.Transport{
		Store: oauth.NewMemoryStore(),
		Grant: oauth.GrantJWTBearer,
		Client: oauth.ClientConfig{ClientID: "workload", Assertion: func(ctx context.Context, issuer, resource string) (string, error) {
			gotIssuer, gotResource = issuer, resource
			return assertion, nil
		}},
	}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	if gotIssuer != as.issuer() || gotResource != rs.mcpURL() {
		t.Errorf("Assertion asked for (%q, %q), want (%q, %q)", gotIssuer, gotResource, as.issuer(), rs.mcpURL())
	}
	f := as.tokens()[0].Form
	if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || f.Get("assertion") != "workload-assertion" ||
		f.Get("resource") != rs.mcpURL() || f.Get("client_id") != "workload" {
		t.Errorf("token request form = %v", f)
	}

	// A new resource server whose tokens the first did not get: the
	// source now gives an assertion the server rejects.
	rs2 := newResourceServer(t, as)
	assertion = "expired-assertion"
	_, _, err := post(t, context.Background(), tr, rs2.mcpURL(), `{}`)
	var te *oauth.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_grant" {
		t.Fatalf("err = %v, want a *TokenError invalid_grant", err)
	}
	if n := len(as.tokens()); n != 2 {
		t.Errorf("token requests = %d, want 2: the rejected one was retried or another grant tried", n)
	}
}

// TestIDJAG: enterprise-managed authorization (SEP-990): the ID token is
// exchanged at the IdP (RFC 8693) for an ID-JAG whose audience is the
// authorization server and whose resource is the MCP server, and the
// ID-JAG is the JWT bearer assertion.
func TestIDJAG(t *testing.T) {
	var mu sync.Mutex
	var exchange url.Values
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		exchange = r.PostForm
		mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{
			"access_token": "the-id-jag", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A",
		})
	}))
	defer idp.Close()
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := &oauth.Transport{
		Store: oauth.NewMemoryStore(),
		Grant: oauth.GrantJWTBearer,
		Client: oauth.ClientConfig{ClientID: "mcp-client", ClientSecret: "mcp-SECRET", Assertion: (&oauth.IDJAG{
			TokenEndpoint: idp.URL + "/token",
			ClientID:      "idp-client",
			IDToken:       func(context.Context) (string, error) { return "the-id-token", nil },
		}).Assertion},
	}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, want := range map[string]string{
		"grant_type":           "urn:ietf:params:oauth:grant-type:token-exchange",
		"requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
		"subject_token":        "the-id-token",
		"subject_token_type":   "urn:ietf:params:oauth:token-type:id_token",
		"audience":             as.issuer(),
		"resource":             rs.mcpURL(),
		"client_id":            "idp-client",
	} {
		if exchange.Get(k) != want {
			t.Errorf("token exchange %s = %q, want %q", k, exchange.Get(k), want)
		}
	}
	tok := as.tokens()[0]
	if tok.Form.Get("assertion") != "the-id-jag" || tok.BasicUser != "mcp-client" {
		t.Errorf("JWT bearer request: assertion %q, client %q", tok.Form.Get("assertion"), tok.BasicUser)
	}
}
