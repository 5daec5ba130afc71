package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A server that wants OAuth gets a hint that says what to do with andon:
// call and tools exit 3 naming `auth: oauth` and `andon auth login`,
// without quoting the challenge's metadata URL or the --url's secrets.
func TestURLNeedingOAuthHintsAtAuthLogin(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource?s3cr3t=1"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(hs.Close) // after the parallel subtests
	u := hs.URL + "/mcp?key=qu3ry"
	for _, args := range [][]string{{"call", "--url", u, "echo"}, {"tools", "--url", u}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			r := runAndon(t, args...)
			r.check(t, exitTransport)
			for _, want := range []string{"requires OAuth authorization", "auth: oauth", "andon auth login NAME"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q: %s", want, r.stderr)
				}
			}
			for _, secret := range []string{"s3cr3t", "rs.example", "qu3ry"} {
				if strings.Contains(r.stderr, secret) {
					t.Errorf("stderr quotes %q: %s", secret, r.stderr)
				}
			}
		})
	}
}
