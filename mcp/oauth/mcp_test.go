package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/oauth"
)

type echoIn struct {
	Text string `json:"text"`
}

// newProtectedGoSDKServer is a go-sdk MCP server (tool echo) behind a
// bearer check against as: the resource server a hosted MCP server is.
func newProtectedGoSDKServer(t *testing.T, as *authServer) *httptest.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "protected", Version: "1"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "echo"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoIn) (*gosdk.CallToolResult, any, error) {
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, nil, nil
	})
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{Stateless: true})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, http.StatusOK, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.issuer()}})
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, ok := as.valid(tok); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestMCPClientThroughTransport: andon's mcp client, given the Transport
// in its HTTP client, connects to an OAuth-protected go-sdk server, lists
// and calls its tools.
func TestMCPClientThroughTransport(t *testing.T) {
	as := newAuthServer(t)
	srv := newProtectedGoSDKServer(t, as)
	ctx := context.Background()
	c, err := mcp.Connect(ctx, mcp.HTTP(srv.URL+"/mcp", &http.Client{Transport: newTransport()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "through oauth"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "through oauth" {
		t.Errorf("echo = %q", res.Text())
	}
	if len(as.auths()) != 1 || len(as.tokens()) != 1 {
		t.Errorf("%d authorizations, %d token requests: want one of each for the whole session", len(as.auths()), len(as.tokens()))
	}
}

// TestMCPClientNeedsLogin: without an Authorize hook, Connect fails with
// an error a caller can tell apart (errors.As *AuthorizationRequiredError)
// to tell the operator to log in.
func TestMCPClientNeedsLogin(t *testing.T) {
	as := newAuthServer(t)
	srv := newProtectedGoSDKServer(t, as)
	tr := newTransport()
	tr.Authorize = nil
	_, err := mcp.Connect(context.Background(), mcp.HTTP(srv.URL+"/mcp", &http.Client{Transport: tr}), nil)
	var are *oauth.AuthorizationRequiredError
	if !errors.As(err, &are) {
		t.Fatalf("err = %v, want *oauth.AuthorizationRequiredError", err)
	}
	if are.Resource != srv.URL+"/mcp" {
		t.Errorf("Resource = %q", are.Resource)
	}
}

// TestLoginThenNonInteractive: Login stores a token; a later Transport
// without an Authorize hook (another process: the runtime after `andon
// auth login`) finds it in the same store and needs no user.
func TestLoginThenNonInteractive(t *testing.T) {
	as := newAuthServer(t)
	srv := newProtectedGoSDKServer(t, as)
	store := oauth.NewMemoryStore()
	login := newTransport()
	login.Store = store
	key, err := login.Login(context.Background(), srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if key != (oauth.Key{Issuer: as.issuer(), Resource: srv.URL + "/mcp"}) {
		t.Errorf("Login key = %+v", key)
	}
	runtime := &oauth.Transport{Store: store}
	c, err := mcp.Connect(context.Background(), mcp.HTTP(srv.URL+"/mcp", &http.Client{Transport: runtime}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(as.auths()) != 1 {
		t.Errorf("authorizations = %d, want only Login's", len(as.auths()))
	}
}

// TestMCPClientSurvivesFailedRefresh: when the token endpoint fails in the
// middle of a session, only the call that needed a token fails, with the
// *TokenError; the client stays usable, and the next call authorizes anew.
func TestMCPClientSurvivesFailedRefresh(t *testing.T) {
	as := newAuthServer(t)
	srv := newProtectedGoSDKServer(t, as)
	ctx := context.Background()
	c, err := mcp.Connect(ctx, mcp.HTTP(srv.URL+"/mcp", &http.Client{Transport: newTransport()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	as.revoke()
	as.mu.Lock()
	as.tokenError = map[string]string{"error": "temporarily_unavailable"}
	as.mu.Unlock()
	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "x"}, nil)
	var te *oauth.TokenError
	if !errors.As(err, &te) || te.Code != "temporarily_unavailable" {
		t.Fatalf("err = %v, want the *TokenError", err)
	}
	as.mu.Lock()
	as.tokenError = nil
	as.mu.Unlock()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "again"}, nil)
	if err != nil || res.Text() != "again" {
		t.Fatalf("the next call: %v, %v", res, err)
	}
}
