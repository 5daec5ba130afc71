package vault_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/vault"
)

const tokenJSON = `{"access_token":"at-SECRET-1","refresh_token":"rt-SECRET-1","token_type":"Bearer"}`

func tokenRef(resource string) vault.OAuthRef {
	return vault.OAuthRef{Kind: vault.OAuthToken, Issuer: "https://as.example.com", Resource: resource}
}

func TestOAuthTokenOpensOnlyForItsHosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ref := tokenRef("https://mcp.example.com/mcp")
	if err := b.vault.OAuthSet(ctx, ref, []byte(tokenJSON), []string{"mcp.example.com"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.vault.OAuthGet(ctx, ref, "MCP.example.com.")
	if err != nil || string(got) != tokenJSON {
		t.Fatalf("OAuthGet for its host = %q, %v", got, err)
	}
	_, err = b.vault.OAuthGet(ctx, ref, "evil.example.net")
	if !errors.Is(err, vault.ErrHostNotAllowed) {
		t.Fatalf("OAuthGet for another host = %v, want ErrHostNotAllowed", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("the error carries the token: %v", err)
	}
	if _, err := b.vault.OAuthGet(ctx, tokenRef("https://other.example.com/mcp"), "other.example.com"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("OAuthGet of another resource = %v, want ErrNotFound", err)
	}
}

func TestOAuthRecordsAreSealedAndHidden(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ref := tokenRef("https://mcp.example.com/mcp")
	if err := b.vault.OAuthSet(ctx, ref, []byte(tokenJSON), []string{"mcp.example.com"}); err != nil {
		t.Fatal(err)
	}
	rows, err := b.rawDB.Query(`SELECT name, sealed FROM secrets`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var sealed []byte
		if err := rows.Scan(&name, &sealed); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(sealed, []byte("SECRET")) || strings.Contains(name, "example") {
			t.Fatalf("record %q holds the token or the resource in the clear", name)
		}
	}
	if infos, err := b.vault.List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("List = %v, %v; OAuth records are internal", infos, err)
	}
	infos, err := b.vault.OAuthList(ctx, vault.OAuthToken, "https://mcp.example.com/mcp")
	if err != nil || len(infos) != 1 || infos[0].OAuthRef != ref || infos[0].Hosts[0] != "mcp.example.com" {
		t.Fatalf("OAuthList = %+v, %v", infos, err)
	}
}

func TestOAuthRecordWithEditedHostsFailsToOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ref := tokenRef("https://mcp.example.com/mcp")
	if err := b.vault.OAuthSet(ctx, ref, []byte(tokenJSON), []string{"mcp.example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rawDB.Exec(`UPDATE secrets SET hosts = '["evil.example.net","mcp.example.com"]' WHERE name LIKE 'andon:oauth:%'`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.vault.OAuthGet(ctx, ref, "evil.example.net"); !errors.Is(err, vault.ErrCorrupt) {
		t.Fatalf("OAuthGet after the hosts were edited = %v, want ErrCorrupt", err)
	}
}

func TestOAuthRecordsSurviveRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ref := vault.OAuthRef{Kind: vault.OAuthClient, Issuer: "https://as.example.com"}
	if err := b.vault.OAuthSet(ctx, ref, []byte(`{"client_id":"c1","client_secret":"cs-SECRET"}`), []string{"as.example.com"}); err != nil {
		t.Fatal(err)
	}
	next := mustKey(t)
	if err := vault.Rotate(ctx, b.store, b.key, next); err != nil {
		t.Fatal(err)
	}
	got, err := vault.New(b.store, next).OAuthGet(ctx, ref, "as.example.com")
	if err != nil || !strings.Contains(string(got), "c1") {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
	if err := b.vault.OAuthDelete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := vault.New(b.store, next).OAuthGet(ctx, ref, "as.example.com"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestOAuthRecordsOnPostgreSQL: the same records, sealed, host-bound and
// rotated, on the PostgreSQL store.
func TestOAuthRecordsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	store, err := sqlstore.OpenPostgres(t.Context(), pgtest.WithParams(pgtest.Schema(t), map[string]string{"pool_max_conns": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, next := mustKey(t), mustKey(t)
	v := vault.New(store, key)
	ctx := t.Context()
	ref := tokenRef("https://mcp.example.com/mcp")
	if err := v.OAuthSet(ctx, ref, []byte(tokenJSON), []string{"mcp.example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.OAuthGet(ctx, ref, "evil.example.net"); !errors.Is(err, vault.ErrHostNotAllowed) {
		t.Fatalf("OAuthGet for another host = %v, want ErrHostNotAllowed", err)
	}
	if err := vault.Rotate(ctx, store, key, next); err != nil {
		t.Fatal(err)
	}
	got, err := vault.New(store, next).OAuthGet(ctx, ref, "mcp.example.com")
	if err != nil || string(got) != tokenJSON {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
	if infos, err := vault.New(store, next).List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("List = %v, %v; OAuth records are internal", infos, err)
	}
}
