package oauth_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log sink safe for the Transport's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// echoingTokenEndpoint makes as's token endpoint fail with an error
// description that repeats everything it was sent: the form (code,
// verifier, refresh token, secret, assertion) and the Authorization header.
func echoingTokenEndpoint(as *authServer) {
	h := as.Config.Handler
	as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/token" {
			h.ServeHTTP(w, r)
			return
		}
		r.ParseForm()
		as.mu.Lock()
		as.tokenRequests = append(as.tokenRequests, tokenRequest{Form: r.PostForm, Grant: r.PostForm.Get("grant_type")})
		as.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]string{
			"error":             "invalid_grant",
			"error_description": "you sent " + r.PostForm.Encode() + " with " + r.Header.Get("Authorization"),
		})
	})
}

// secretsIn lists the secrets of the test servers found in s: every token,
// code and client secret they issue contains SECRET, and the verifiers
// and assertions are taken from what the token endpoint saw.
func secretsIn(s string, as *authServer) []string {
	var found []string
	if strings.Contains(s, "SECRET") {
		found = append(found, "a value containing SECRET")
	}
	for _, tr := range as.tokens() {
		for _, k := range []string{"code_verifier", "client_assertion", "refresh_token", "code", "client_secret"} {
			if v := tr.Form.Get(k); v != "" && strings.Contains(s, v) {
				found = append(found, k)
			}
		}
	}
	return found
}

// TestSecretsNeverInErrorsOrLogs: errors and debug logs of failed and
// successful token requests carry no token, code, verifier, secret or
// assertion, even when the server repeats them in its error description.
func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	t.Run("authorization code", func(t *testing.T) {
		as := newAuthServer(t)
		as.metadata = map[string]any{"token_endpoint_auth_methods_supported": []string{"client_secret_post"}}
		echoingTokenEndpoint(as)
		rs := newResourceServer(t, as)
		tr := newTransport()
		tr.Logger = logger
		_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
		if err == nil {
			t.Fatal("want the token endpoint's error")
		}
		if len(as.tokens()) == 0 || as.tokens()[0].Form.Get("client_secret") == "" {
			t.Fatal("the token request did not carry the secret this test looks for")
		}
		if found := secretsIn(err.Error(), as); len(found) > 0 {
			t.Errorf("error %q contains %v", err, found)
		}
	})
	t.Run("basic header", func(t *testing.T) {
		as := newAuthServer(t)
		echoingTokenEndpoint(as)
		rs := newResourceServer(t, as)
		tr := newTransport()
		tr.Logger = logger
		_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
		if err == nil || strings.Contains(err.Error(), "Basic ") && !strings.Contains(err.Error(), "Basic [redacted]") {
			t.Errorf("error %v: want it, without the Basic credential", err)
		}
	})
	t.Run("refresh", func(t *testing.T) {
		as := newAuthServer(t)
		rs := newResourceServer(t, as)
		tr := newTransport()
		tr.Logger = logger
		if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
			t.Fatal(err)
		}
		echoingTokenEndpoint(as)
		as.revoke()
		_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
		if err == nil {
			t.Fatal("want the token endpoint's error")
		}
		if found := secretsIn(err.Error(), as); len(found) > 0 {
			t.Errorf("error %q contains %v", err, found)
		}
	})
	t.Run("success", func(t *testing.T) {
		as := newAuthServer(t)
		rs := newResourceServer(t, as)
		tr := newTransport()
		tr.Logger = logger
		nearExpiry(tr)
		if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
			t.Fatal(err)
		}
		if found := secretsIn(logs.String(), as); len(found) > 0 {
			t.Errorf("logs contain %v", found)
		}
	})
	if !strings.Contains(logs.String(), "oauth: token request") {
		t.Errorf("no token request was logged; the log check saw nothing:\n%s", logs.String())
	}
	if found := strings.Contains(logs.String(), "SECRET"); found {
		t.Errorf("the logs contain a secret:\n%s", logs.String())
	}
}
