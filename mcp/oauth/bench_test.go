package oauth_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkRoundTrip compares a request carrying a token the Transport
// already holds with the same request carrying a static Authorization
// header through http.DefaultTransport: the Transport's cost on the hot
// path (a lock, a clone, a header) on loopback.
func BenchmarkRoundTrip(b *testing.B) {
	as := newAuthServer(b)
	rs := newResourceServer(b, as)
	tr := newTransport()
	if _, _, err := postB(context.Background(), tr, rs.mcpURL(), "", `{}`); err != nil {
		b.Fatal(err)
	}
	_, auths := rs.seen()
	static := auths[len(auths)-1]
	// Record nothing per request from here on: only the round trip.
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	})
	for _, c := range []struct {
		name   string
		rt     http.RoundTripper
		header string
	}{
		{"static-header", http.DefaultTransport, static},
		{"oauth-transport", tr, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if status, _, err := postB(context.Background(), c.rt, rs.mcpURL(), c.header, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); err != nil || status != 200 {
					b.Fatal(status, err)
				}
			}
		})
	}
}

func postB(ctx context.Context, rt http.RoundTripper, u, auth, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
