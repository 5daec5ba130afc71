package oauthtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/andonhq/andon/internal/oauthtest"
)

// TestEnvCodeFlowRefreshAndStepUp drives the servers by hand, as any client
// would: it is the test of the test servers, so that a failure in andon's
// tests points at andon.
func TestEnvCodeFlowRefreshAndStepUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := oauthtest.Start(t, &oauthtest.Config{
		RS: oauthtest.RSConfig{ToolScopes: map[string]string{"slow": "mcp:write"}},
		Clients: []oauthtest.Client{{ClientID: "cli", ApplicationType: "native", TokenEndpointAuthMethod: "none",
			RedirectURIs: []string{"http://127.0.0.1/callback"}, GrantTypes: []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"}}},
	})

	// Unauthenticated: 401 naming the metadata.
	resp := post(t, env.RS.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), env.RS.MetadataURL) {
		t.Fatalf("unauthenticated: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	conf := &oauth2.Config{ClientID: "cli", RedirectURL: "http://127.0.0.1:5555/callback",
		Endpoint: oauth2.Endpoint{AuthURL: env.AS.Issuer + "/auth", TokenURL: env.AS.Issuer + "/token", AuthStyle: oauth2.AuthStyleInParams},
		Scopes:   []string{"mcp:read"}}
	tok := codeFlow(t, conf, env, "mcp:read")
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token")
	}
	// Past the check, the MCP server answers (400 here: no session).
	post(t, env.RS.URL, tok.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if got := lastOutcome(env); got != oauthtest.OutcomeOK {
		t.Fatalf("echo with mcp:read: %s", got)
	}
	r := post(t, env.RS.URL, tok.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1}}}`)
	if r.StatusCode != 403 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `insufficient_scope`) {
		t.Fatalf("slow with mcp:read: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}

	// Refresh.
	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if refreshed.AccessToken == tok.AccessToken {
		t.Fatal("refresh returned the same access token")
	}
	// The server logs after it answers: wait for the line.
	env.AS.WaitFor(t, "the refresh", func(e oauthtest.Event) bool { return e.Event == "grant.success" && e.GrantType == "refresh_token" })

	// Step-up: authorize again for both scopes.
	up := codeFlow(t, conf, env, "mcp:read mcp:write")
	post(t, env.RS.URL, up.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1}}}`)
	if got := lastOutcome(env); got != oauthtest.OutcomeOK {
		t.Fatalf("slow after step-up: %s", got)
	}
}

func lastOutcome(env *oauthtest.Env) string {
	log := env.RS.Log()
	return log[len(log)-1].Outcome
}

func TestEnvDynamicRegistration(t *testing.T) {
	t.Parallel()
	env := oauthtest.Start(t, nil)
	md, err := env.AS.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"redirect_uris": []string{"http://127.0.0.1:6000/callback"}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "client_name": "andon"})
	resp, err := http.Post(md["registration_endpoint"].(string), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg map[string]any
	json.NewDecoder(resp.Body).Decode(&reg)
	if resp.StatusCode != 201 || reg["client_id"] == "" {
		t.Fatalf("registration: %d %v", resp.StatusCode, reg)
	}
	conf := &oauth2.Config{ClientID: reg["client_id"].(string), RedirectURL: "http://127.0.0.1:6000/callback",
		Endpoint: oauth2.Endpoint{AuthURL: md["authorization_endpoint"].(string), TokenURL: md["token_endpoint"].(string), AuthStyle: oauth2.AuthStyleInParams}}
	codeFlow(t, conf, env, "mcp:read")
	env.AS.WaitFor(t, "the registration", func(e oauthtest.Event) bool { return e.Event == "registration" })
}

func codeFlow(t *testing.T, conf *oauth2.Config, env *oauthtest.Env, scope string) *oauth2.Token {
	t.Helper()
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", env.RS.URL), oauth2.SetAuthURLParam("scope", scope))
	q, err := oauthtest.Approve(ctx, authURL)
	if err != nil {
		t.Fatalf("%v\n%+v", err, env.AS.Events())
	}
	code, state := q.Get("code"), q.Get("state")
	if state != "st4te" || code == "" {
		t.Fatalf("state %q, code empty: %v", state, code == "")
	}
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", env.RS.URL))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

func post(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
