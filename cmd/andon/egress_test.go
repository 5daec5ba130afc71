package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// Inside andon, an MCP server reached over HTTP goes through egress: the
// credential reaches the server, never the audit log; every request leaves
// one audit row under its run; and a call cancelled in flight is recorded
// as such (the credential went out). TestMCPAuditRowsTellDeadlineCancelAndBeforeSend
// covers the rest of the vocabulary, through the catalogue.
func TestMCPOverHTTPGoesThroughEgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, log := newVaultAndLog(t)

	srv := mcptest.NewServer(nil)
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.Stateless}}))
	defer hs.Close()
	const secret = "s3cr3t-token-for-egress-test"
	placement, _ := vault.ParsePlacement("bearer")
	if err := v.Set(ctx, "demo-token", []byte(secret), placement, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	httpClient := node.MCPHTTPClient(egress.Config{Audit: log, Secrets: v, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	client, err := httpClient(ctx, catalogue.Server{Name: "remote", URL: hs.URL + "/mcp", Credential: "demo-token"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, mcp.HTTP(hs.URL+"/mcp", client), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	runCtx := egress.WithRun(ctx, "run_egress")
	if res, err := c.CallTool(runCtx, "echo", map[string]any{"text": "hi"}, nil); err != nil || res.Text() != "hi" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	calls := srv.ReceivedMessages("tools/call")
	if got := calls[0].Header.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("the server got Authorization %q", got)
	}

	cancelCtx, cancel := context.WithCancel(runCtx)
	go func() {
		srv.WaitFor(context.Background(), func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		cancel()
	}()
	if _, err := c.CallTool(cancelCtx, "slow", map[string]any{"ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
		t.Fatalf("slow = %v, want ErrCancelled", err)
	}
	// A row is written when its call is truly over (a stream at its end),
	// so the two rows may come in either order.
	deadline := time.Now().Add(10 * time.Second)
	var rows []audit.Row
	actions := map[audit.Action]int{}
	for {
		rows, err = log.List(ctx, audit.Query{RunID: "run_egress"})
		if err != nil {
			t.Fatal(err)
		}
		clear(actions)
		for _, r := range rows {
			if r.Action == audit.ActionHTTPCall && !r.OK {
				continue
			}
			actions[r.Action]++
		}
		if len(rows) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(rows) != 2 || actions[audit.ActionHTTPCall] != 1 || actions[audit.ActionHTTPCallCancelled] != 1 {
		t.Fatalf("audit rows of the run = %+v; want one ok http_call (echo) and one http_call_cancelled (slow)", rows)
	}
	for _, r := range rows {
		if r.Host == "" || r.Path != "/mcp" || r.Purpose != "mcp remote" {
			t.Errorf("row %+v lacks host, path or purpose", r.Entry)
		}
	}
	all, _ := log.List(ctx, audit.Query{})
	for _, r := range all {
		if strings.Contains(r.Reason+r.Path+r.Host+r.Purpose, secret) {
			t.Errorf("the secret is in an audit row: %+v", r.Entry)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Error("the secret is in the log")
	}
	if _, err := log.Verify(ctx); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}

// newVaultAndLog returns a vault and an audit log on a new SQLite store, as
// serve assembles them.
func newVaultAndLog(t *testing.T) (*vault.Vault, *audit.Log) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, _ := vault.NewKey()
	v := vault.New(st, key)
	auditKey, err := v.DeriveKey(ctx, auditKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	return v, audit.New(st, auditKey)
}
