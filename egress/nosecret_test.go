package egress_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/vault"
)

// TestNoSecretAnywhere runs every kind of call with a distinctive secret in
// each placement and searches everything the calls left behind — log lines,
// error strings, audit rows, the response's Request, the database files — for
// the secret in any encoding it travels in.
func TestNoSecretAnywhere(t *testing.T) {
	t.Parallel()
	const secret = "ANDON-DISTINCTIVE-9f2c41"
	for _, placement := range []string{"bearer", "header:X-Api-Key", "basic", "query:api_key"} {
		t.Run(placement, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			value := secret
			if placement == "basic" {
				value = "user:" + secret
			}
			b.setSecret(t, "token", value, placement, "127.0.0.1", "localhost")
			b.resolver.table = map[string][]netip.Addr{"localhost": addrs("127.0.0.1")}

			var captured []string
			capture := func(err error) {
				if err != nil {
					captured = append(captured, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
				}
			}
			var sawSecret atomic.Int64
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.RawQuery, url.QueryEscape(secret)) || strings.Contains(fmt.Sprint(r.Header), secret) ||
					strings.Contains(r.Header.Get("Authorization"), base64.StdEncoding.EncodeToString([]byte(value))) {
					sawSecret.Add(1)
				}
				switch r.URL.Path {
				case "/redirect":
					http.Redirect(w, r, "http://169.254.169.254/?token="+secret, http.StatusFound)
				case "/big":
					_, _ = w.Write([]byte(strings.Repeat("z", 4096)))
				case "/stall":
					<-r.Context().Done()
				case "/fail":
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = io.WriteString(w, "bad credentials")
				default:
					_, _ = io.WriteString(w, "ok")
				}
			})
			cfg := b.config("token", "127.0.0.1")
			cfg.MaxResponseBytes = 1024
			c := b.client(t, cfg)
			base := srv.srv.URL

			do := func(ctx context.Context, rawURL string) {
				resp, err := get(ctx, t, c, rawURL)
				capture(err)
				if resp != nil {
					captured = append(captured, resp.Request.URL.String(), fmt.Sprint(resp.Request.Header))
					_, err = io.ReadAll(resp.Body)
					capture(err)
					resp.Body.Close()
				}
			}
			for _, p := range []string{"/ok?page=1", "/fail", "/redirect", "/big"} {
				do(t.Context(), base+p)
			}
			ctx, cancel := context.WithCancelCause(t.Context())
			cancel(errors.New("stop"))
			do(ctx, base+"/ok") // cancelled before send
			ctx, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
			do(ctx, base+"/stall") // deadline in flight
			cancel2()
			do(t.Context(), "https://169.254.169.254/?x=1")                                           // refused
			do(t.Context(), "https://localhost/")                                                     // refused after resolution
			do(t.Context(), "http://127.0.0.1:1/")                                                    // nothing listens
			capture(b.vault.Apply(t.Context(), "token", httptestRequest(t, "https://evil.example/"))) // vault refusal
			wrong, _ := vault.NewKey()
			capture(vault.New(b.backend, wrong).Apply(t.Context(), "token", httptestRequest(t, "https://127.0.0.1/")))
			capture(vault.Rotate(t.Context(), b.backend, wrong, wrong))

			if sawSecret.Load() == 0 {
				t.Fatal("the server never saw the secret: the flows did not exercise injection")
			}
			rows, err := b.log.List(t.Context(), audit.Query{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) < 9 {
				t.Fatalf("only %d audit rows", len(rows))
			}
			captured = append(captured, fmt.Sprintf("%+v", rows), b.logs.String())
			for _, suffix := range []string{"", "-wal"} {
				if data, err := os.ReadFile(filepath.Clean(b.dbPath + suffix)); err == nil {
					captured = append(captured, string(data))
				}
			}
			forms := []string{secret, url.QueryEscape(secret), base64.StdEncoding.EncodeToString([]byte(value))}
			all := strings.Join(captured, "\n")
			for _, form := range forms {
				if i := strings.Index(all, form); i >= 0 {
					lo := max(0, i-120)
					t.Fatalf("the secret (%q) appears in captured output: …%s…", form, all[lo:min(len(all), i+80)])
				}
			}
			if !strings.Contains(b.logs.String(), "request refused") {
				t.Fatal("the log capture is empty: the search above proves nothing")
			}
		})
	}
}

func httptestRequest(t *testing.T, rawURL string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
