package oauthtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/andonhq/andon/internal/oauthtest"
)

func TestASClientCredentials(t *testing.T) {
	t.Parallel()
	as := oauthtest.StartAS(t, &oauthtest.ASConfig{
		Resources: []oauthtest.Resource{{Resource: "http://127.0.0.1:1/mcp", Scopes: []string{"mcp:read", "mcp:write"}}},
		Clients: []oauthtest.Client{{ClientID: "m2m", ClientSecret: "m2m-secret-value", GrantTypes: []string{"client_credentials"},
			RedirectURIs: []string{}, ResponseTypes: []string{}, Scope: "mcp:read mcp:write"}},
	})
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {"http://127.0.0.1:1/mcp"}, "scope": {"mcp:read"}}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, as.Issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("m2m", "m2m-secret-value")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %v\n%s", resp.StatusCode, body, as.Stderr())
	}
	t.Logf("token_type=%v scope=%v events=%+v", body["token_type"], body["scope"], as.Events())
}

// TestASStallTokenSeesTheClientGo checks the hold a cancel test relies on:
// a held token request is logged, and so is its client going away.
func TestASStallTokenSeesTheClientGo(t *testing.T) {
	t.Parallel()
	as := oauthtest.StartAS(t, nil)
	if err := as.StallToken(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, as.Issuer+"/token", strings.NewReader("grant_type=client_credentials"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	as.WaitFor(t, "the held token request", func(e oauthtest.Event) bool { return e.Event == "token.held" })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the held request returned")
	}
	as.WaitFor(t, "the client going away", func(e oauthtest.Event) bool { return e.Event == "token.abandoned" })
}
