package egress_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// A client for one credential: the secret goes only to its hosts, and each
// call leaves one audit row.
func ExampleNewClient() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "egress-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	key, _ := vault.NewKey()
	v := vault.New(store, key)
	auditKey, _ := v.DeriveKey(ctx, "audit hmac v1")
	auditLog := audit.New(store, auditKey)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "server got %q", r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	// The test server is on loopback, which only a literal allowlist entry
	// can open.
	_ = v.Set(ctx, "demo", []byte("tok-1"), vault.Placement{Kind: vault.Bearer}, []string{"127.0.0.1"})
	client, err := egress.NewClient(ctx, &egress.Config{
		Purpose:      "example",
		Audit:        auditLog,
		Secrets:      v,
		Credential:   "demo",
		AllowedHosts: []string{"127.0.0.1"},
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.CloseIdleConnections()

	req, _ := http.NewRequestWithContext(egress.WithRun(ctx, "run-1"), http.MethodGet, srv.URL+"/hello?x=1", nil)
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))

	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "https://169.254.169.254/latest/meta-data/", nil)
	_, err = client.Do(req)
	fmt.Println(errors.Is(err, egress.ErrRefused))

	rows, _ := auditLog.List(ctx, audit.Query{})
	for _, r := range rows {
		fmt.Printf("%s %s %s ok=%v %q\n", r.Action, r.Method, r.Path, r.OK, r.Reason)
	}
	// Output:
	// server got "Bearer tok-1"
	// true
	// http_call GET /hello ok=true "completed"
	// http_call GET /latest/meta-data/ ok=false "host not allowed"
}

// A call cancelled before it is sent reads no secret and says so.
func ExampleCancelledError() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "egress-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	auditLog := audit.New(store, make([]byte, 32))
	client, _ := egress.NewClient(ctx, &egress.Config{Purpose: "example", Audit: auditLog, AllowedHosts: []string{"api.example.com"}})

	cctx, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("operator cancelled the run"))
	req, _ := http.NewRequestWithContext(cctx, http.MethodPost, "https://api.example.com/v1", nil)
	_, err = client.Do(req)

	var ce *egress.CancelledError
	fmt.Println(errors.As(err, &ce) && ce.BeforeSend, errors.Is(err, context.Canceled))
	rows, _ := auditLog.List(ctx, audit.Query{})
	fmt.Println(rows[0].Action)
	// Output:
	// true true
	// http_call_cancelled_before_send
}
