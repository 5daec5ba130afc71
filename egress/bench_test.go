package egress_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// memRecorder counts rows and keeps nothing: the guard's cost without a
// store write.
type memRecorder struct{ n atomic.Int64 }

func (m *memRecorder) Record(_ context.Context, e audit.Entry) (audit.Row, error) {
	m.n.Add(1)
	return audit.Row{Entry: e}, nil
}

// BenchmarkGuardOverhead measures a guarded call against a plain
// http.Client on the same loopback server, both keeping connections alive.
// The host is an allowlisted IP literal, so no DNS lookup is made. Each
// iteration makes one plain and one guarded call, interleaved, and the
// benchmark reports both times and their ratio.
func BenchmarkGuardOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	store, err := sqlstore.Open(b.Context(), filepath.Join(b.TempDir(), "andon.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	key, _ := vault.NewKey()
	v := vault.New(store, key)
	if err := v.Set(b.Context(), "bench", []byte("bench-token"), vault.Placement{Kind: vault.Bearer}, []string{"127.0.0.1"}); err != nil {
		b.Fatal(err)
	}
	auditKey, _ := v.DeriveKey(b.Context(), "audit hmac v1")

	variants := []struct {
		name       string
		credential string
		recorder   egress.Recorder
	}{
		{"guard", "", &memRecorder{}},
		{"guard+credential", "bench", &memRecorder{}},
		{"guard+credential+sqlite-audit", "bench", audit.New(store, auditKey)},
	}
	for _, vr := range variants {
		b.Run(vr.name, func(b *testing.B) {
			plain := &http.Client{Transport: &http.Transport{MaxIdleConns: 100, IdleConnTimeout: 90 * time.Second}}
			defer plain.CloseIdleConnections()
			guarded, err := egress.NewClient(b.Context(), &egress.Config{
				Purpose: "bench", Audit: vr.recorder, Secrets: v, Credential: vr.credential,
				AllowedHosts: []string{"127.0.0.1"},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer guarded.CloseIdleConnections()
			call := func(c *http.Client) time.Duration {
				start := time.Now()
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodGet, srv.URL+"/mcp", nil)
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return time.Since(start)
			}
			call(plain) // warm both connections
			call(guarded)
			var plainTotal, guardedTotal time.Duration
			b.ResetTimer()
			for b.Loop() {
				plainTotal += call(plain)
				guardedTotal += call(guarded)
			}
			n := float64(b.N)
			b.ReportMetric(float64(plainTotal.Nanoseconds())/n, "plain-ns/call")
			b.ReportMetric(float64(guardedTotal.Nanoseconds())/n, "guarded-ns/call")
			b.ReportMetric(float64(guardedTotal)/float64(plainTotal), "ratio")
		})
	}
}
