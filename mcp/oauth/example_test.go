package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/andonhq/andon/mcp/oauth"
)

// exampleServer is one loopback origin serving a protected resource at
// /mcp and a minimal authorization server beside it, for the examples.
func exampleServer() *httptest.Server {
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"registration_endpoint": srv.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, map[string]any{"client_id": "example-client", "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		to := q.Get("redirect_uri") + "?" + url.Values{"code": {"c"}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, to, http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"access_token": "example-token", "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer example-token" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	srv = httptest.NewServer(mux)
	return srv
}

// A Transport in the HTTP client of mcp.HTTP makes the client reach
// OAuth-protected servers: the first request's 401 starts discovery,
// registration and authorization, and the request is retried with the
// token. Here Authorize plays the user by following the redirect; a
// command-line program would open a browser on a LoopbackRedirect.
func ExampleTransport() {
	srv := exampleServer()
	defer srv.Close()

	lb, err := oauth.NewLoopbackRedirect(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lb.Close()
	t := &oauth.Transport{
		Store:  oauth.NewMemoryStore(),
		Client: oauth.ClientConfig{RedirectURL: lb.URL},
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			// A real program prints authURL and opens a browser on it.
			resp, err := http.Get(authURL)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			return lb.Wait(ctx)
		},
	}
	// With andon's mcp package: mcp.HTTP(url, &http.Client{Transport: t}).
	hc := &http.Client{Transport: t}
	resp, err := hc.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"jsonrpc":"2.0","id":1,"result":{}}
}

// Without an Authorize hook, a server that needs a user's authorization
// fails with *AuthorizationRequiredError: the cue to run a login (Login,
// with a LoopbackRedirect) and retry.
func ExampleAuthorizationRequiredError() {
	srv := exampleServer()
	defer srv.Close()

	t := &oauth.Transport{Store: oauth.NewMemoryStore()}
	_, err := (&http.Client{Transport: t}).Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	var are *oauth.AuthorizationRequiredError
	fmt.Println(errors.As(err, &are), strings.TrimPrefix(are.Resource, srv.URL))
	// Output: true /mcp
}
