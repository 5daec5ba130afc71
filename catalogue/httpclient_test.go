package catalogue_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp/mcptest"
)

// viaHeader marks the requests a RoundTripper carried.
type viaHeader struct{ name string }

func (v viaHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Via", v.name)
	return http.DefaultTransport.RoundTrip(r)
}

// A server reached by URL is called through the client that
// Options.HTTPClient returns for it (andon's egress, in a node), and a
// failure to make that client fails the server's import with its error,
// sending nothing.
func TestOptionsHTTPClientCarriesAServersRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := mcptest.NewServer(nil)
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	refused := errors.New("no client for this server")
	var mu sync.Mutex
	imports := map[string]error{}
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{
		{Name: "through", URL: hs.URL + "/mcp"},
		{Name: "refused", URL: hs.URL + "/mcp?refused"},
	}}, &catalogue.Options{
		HTTPClient: func(_ context.Context, s catalogue.Server) (*http.Client, error) {
			if s.Name == "refused" {
				return nil, refused
			}
			return &http.Client{Transport: viaHeader{"client of " + s.Name}}, nil
		},
		OnImport: func(server string, err error) {
			mu.Lock()
			defer mu.Unlock()
			imports[server] = err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := cat.List(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if err := imports["through"]; err != nil {
		t.Fatalf("import of the server through the client: %v", err)
	}
	if err := imports["refused"]; !errors.Is(err, refused) {
		t.Fatalf("import of the server without a client: %v, want the HTTPClient's error", err)
	}
	if got := len(srv.ReceivedMessages("tools/list")); got != 1 {
		t.Fatalf("the server got %d tools/list requests, want 1 (none from the refused server)", got)
	}
	for _, m := range srv.Records() {
		if m.Kind != mcptest.Received {
			continue
		}
		if got := m.Header.Get("X-Via"); got != "client of through" {
			t.Errorf("%s came with X-Via %q, want it through the server's client", m.Method, got)
		}
	}
}
