package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestLoopbackRedirect: the redirect listener is on 127.0.0.1, hands the
// first authorization response to Wait, and refuses a second.
func TestLoopbackRedirect(t *testing.T) {
	lb, err := oauth.NewLoopbackRedirect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if !strings.HasPrefix(lb.URL, "http://127.0.0.1:") || !strings.HasSuffix(lb.URL, "/callback") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT/callback", lb.URL)
	}
	resp, err := http.Get(lb.URL + "?code=c1&state=s1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("callback status = %d", resp.StatusCode)
	}
	v, err := lb.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.Get("code") != "c1" || v.Get("state") != "s1" {
		t.Errorf("Wait = %v", v)
	}
	resp, err = http.Get(lb.URL + "?code=c2&state=s2")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("second callback status = %d, want 409", resp.StatusCode)
	}
}

// TestLoginWithLoopbackRedirect: the command-line login: the Authorize
// hook "opens the browser" (here: follows the redirect as a browser would,
// to the loopback listener) and waits for the response there.
func TestLoginWithLoopbackRedirect(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	lb, err := oauth.NewLoopbackRedirect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	tr := &oauth.Transport{
		Store:  oauth.NewMemoryStore(),
		Client: oauth.ClientConfig{RedirectURL: lb.URL},
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			resp, err := http.Get(authURL) // the browser: follows the redirect to lb
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			return lb.Wait(ctx)
		},
	}
	if _, err := tr.Login(context.Background(), rs.mcpURL()); err != nil {
		t.Fatal(err)
	}
	if len(as.tokens()) != 1 {
		t.Errorf("token requests = %d, want 1", len(as.tokens()))
	}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Errorf("after login: %d, %v", status, err)
	}
}
