package audit_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/sqlstore"
)

// Each call leaves one row; Verify walks the chain.
func ExampleLog_Verify() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	key := make([]byte, 32) // in andon: vault.Vault.DeriveKey(ctx, "audit hmac v1")
	_, _ = rand.Read(key)
	l := audit.New(store, key)

	for _, a := range []audit.Action{audit.ActionHTTPCall, audit.ActionHTTPCallCancelledBeforeSend} {
		if _, err := l.Record(ctx, audit.Entry{Action: a, Method: "POST", Host: "mcp.example.com", Path: "/mcp?session=abc"}); err != nil {
			log.Fatal(err)
		}
	}
	rows, _ := l.List(ctx, audit.Query{})
	for _, r := range rows {
		fmt.Println(r.Seq, r.Action, r.Path)
	}
	sum, err := l.Verify(ctx)
	fmt.Println(sum.Rows, errors.Is(err, audit.ErrTampered))
	// Output:
	// 1 http_call /mcp
	// 2 http_call_cancelled_before_send /mcp
	// 2 false
}
