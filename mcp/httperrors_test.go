package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// connectTo connects to an endpoint that answers every request with
// handler, through a URL with userinfo and a query string, and returns
// Connect's error. The error must never quote the URL's secrets.
func connectTo(t *testing.T, version string, handler http.HandlerFunc) error {
	t.Helper()
	hs := httptest.NewServer(handler)
	defer hs.Close()
	u := strings.Replace(hs.URL, "http://", "http://user:pa55word@", 1) + "/mcp?key=qu3ry"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.HTTP(u, hs.Client()), &mcp.ClientOptions{ProtocolVersion: version})
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded")
	}
	for _, secret := range []string{"pa55word", "qu3ry", "s3cr3t", "rs.example"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes %q: %v", secret, err)
		}
	}
	return err
}

// A 401 whose challenge names protected resource metadata says that the
// server wants OAuth, as a type a caller can detect, carrying the metadata
// URL; it still matches *HTTPError. Whatever the body, and on every HTTP
// generation (HTTP+SSE's GET included).
func TestHTTP401WithResourceMetadataSaysOAuth(t *testing.T) {
	t.Parallel()
	const metadata = "https://rs.example/.well-known/oauth-protected-resource?s3cr3t=1"
	for _, version := range []string{"", mcp.Version20251125, mcp.Version20241105} {
		for _, body := range []string{"", `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}`} {
			t.Run("protocol="+version+"/body="+body[:min(len(body), 1)], func(t *testing.T) {
				t.Parallel()
				err := connectTo(t, version, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+metadata+`", scope="tickets:read"`)
					if body != "" {
						w.Header().Set("Content-Type", "application/json")
					}
					w.WriteHeader(http.StatusUnauthorized)
					w.Write([]byte(body))
				})
				var oe *mcp.OAuthRequiredError
				if !errors.As(err, &oe) || oe.ResourceMetadata != metadata {
					t.Fatalf("Connect = %v, want an *OAuthRequiredError carrying the metadata URL", err)
				}
				var he *mcp.HTTPError
				if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized {
					t.Errorf("Connect = %v, want it to match an *HTTPError with status 401", err)
				}
				if !strings.Contains(err.Error(), "requires OAuth authorization") {
					t.Errorf("the error does not say OAuth is needed: %v", err)
				}
			})
		}
	}
}

// A 401 without such a challenge is a plain HTTP error.
func TestHTTP401WithoutResourceMetadataIsPlain(t *testing.T) {
	t.Parallel()
	err := connectTo(t, mcp.Version20251125, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="s3cr3t"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	var he *mcp.HTTPError
	if errors.As(err, new(*mcp.OAuthRequiredError)) || !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Connect = %v, want a plain *HTTPError with status 401", err)
	}
}

// An HTTP 200 with a web page is named as such: its media type, and that
// the endpoint does not look like an MCP endpoint (never the header's
// parameters).
func TestHTTP200WithHTMLNamesTheContentType(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", mcp.Version20260728, mcp.Version20251125} {
		t.Run("protocol="+version, func(t *testing.T) {
			t.Parallel()
			err := connectTo(t, version, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=s3cr3t")
				w.Write([]byte("<html>Welcome</html>"))
			})
			var he *mcp.HTTPError
			if !errors.As(err, &he) || he.StatusCode != http.StatusOK || he.ContentType != "text/html" {
				t.Fatalf("Connect = %v, want an *HTTPError with status 200 and ContentType text/html", err)
			}
			for _, want := range []string{"HTTP 200 OK with Content-Type text/html", "does not look like an MCP endpoint", "application/json or text/event-stream"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
		})
	}
}
