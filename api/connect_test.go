package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
)

// TestConnectRefusals: Connect starts nothing for a server without auth:
// oauth, nor for a console reached at a host that is not loopback, and the
// callback acts on no state it did not hand out. (The flow itself is
// TestConsoleConnectInBrowser's, in cmd/andon, against oidc-provider.)
func TestConnectRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	servers := map[string]catalogue.Server{
		"plain":   {Name: "plain", URL: "http://127.0.0.1:1/mcp"},
		"tickets": {Name: "tickets", URL: "http://127.0.0.1:1/mcp", Auth: catalogue.AuthOAuth},
	}
	// andon.example.com is allowed (a proxy's name), so that Connect's own
	// loopback check is what refuses it.
	h, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, Catalogue: emptyCatalogue(t), AllowedHosts: []string{"andon.example.com"}, Connect: &api.Connect{
		Server: func(name string) (catalogue.Server, error) {
			if s, ok := servers[name]; ok {
				return s, nil
			}
			return catalogue.Server{}, catalogue.ErrUnknownServer
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, host string
		status             int
		says               string
	}{
		{"POST", "/v1/servers/plain/connect", "127.0.0.1:7700", http.StatusConflict, "does not have auth: oauth"},
		{"POST", "/v1/servers/nope/connect", "127.0.0.1:7700", http.StatusNotFound, "no such server"},
		{"POST", "/v1/servers/tickets/connect", "andon.example.com:7700", http.StatusBadRequest, "loopback"},
		{"GET", "/callback?state=never-handed-out&code=x", "127.0.0.1:7700", http.StatusBadRequest, "no login under way"},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		req.Host = c.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("%s %s (host %s) = %d %s, want %d saying %q", c.method, c.path, c.host, w.Code, w.Body, c.status, c.says)
		}
	}
}
