package vault_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// A secret is set once and then only ever applied to a request for one of
// its hosts.
func ExampleVault_Apply() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vault-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	key, _ := vault.NewKey()
	v := vault.New(store, key)

	placement, _ := vault.ParsePlacement("header:X-API-Key")
	if err := v.Set(ctx, "weather", []byte("k-123"), placement, []string{"api.weather.example"}); err != nil {
		log.Fatal(err)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.weather.example/today", nil)
	if err := v.Apply(ctx, "weather", req); err != nil {
		log.Fatal(err)
	}
	fmt.Println(req.Header.Get("X-Api-Key"))

	other, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://elsewhere.example/", nil)
	fmt.Println(v.Apply(ctx, "weather", other))
	// Output:
	// k-123
	// secret "weather", host "elsewhere.example": vault: host not allowed for this secret
}

// Rotating the master key re-seals every secret in one transaction.
func ExampleRotate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vault-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	oldKey, _ := vault.NewKey()
	_ = vault.New(store, oldKey).Set(ctx, "api", []byte("tok"), vault.Placement{Kind: vault.Bearer}, []string{"api.example"})

	newKey, _ := vault.NewKey()
	if err := vault.Rotate(ctx, store, oldKey, newKey); err != nil {
		log.Fatal(err)
	}
	fmt.Println(vault.New(store, newKey).Check(ctx))
	// Output:
	// <nil>
}
