package vault_test

import (
	"database/sql"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

type testBundle struct {
	path  string
	store *sqlstore.Store
	key   vault.Key
	vault *vault.Vault
	rawDB *sql.DB
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "andon.db")
	store, err := sqlstore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	key := mustKey(t)
	return &testBundle{path: path, store: store, key: key, vault: vault.New(store, key), rawDB: raw}
}

func mustKey(t *testing.T) vault.Key {
	t.Helper()
	k, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustPlacement(t *testing.T, s string) vault.Placement {
	t.Helper()
	p, err := vault.ParsePlacement(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(t *testing.T, url string) *http.Request {
	t.Helper()
	return httptest.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
}

func TestApplyPutsTheSecretWhereItsPlacementSays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		placement string
		value     string
		check     func(r *http.Request) bool
	}{
		{"bearer", "tok-123", func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer tok-123" }},
		{"header:X-API-Key", "k-456", func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == "k-456" }},
		{"basic", "alice:pa:ss", func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "alice" && p == "pa:ss"
		}},
		{"query:api_key", "q&7=x", func(r *http.Request) bool {
			return r.URL.Query().Get("api_key") == "q&7=x" && r.URL.Query().Get("keep") == "1"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.placement, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if err := b.vault.Set(t.Context(), "api", []byte(tt.value), mustPlacement(t, tt.placement), []string{"API.example.com."}); err != nil {
				t.Fatal(err)
			}
			req := request(t, "https://api.example.com:8443/v1?keep=1")
			if err := b.vault.Apply(t.Context(), "api", req); err != nil {
				t.Fatal(err)
			}
			if !tt.check(req) {
				t.Fatalf("the secret is not where %s says: header %v, url %s", tt.placement, req.Header, req.URL)
			}
		})
	}
}

func TestApplyRefusesAHostTheSecretIsNotFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.vault.Set(t.Context(), "api", []byte("s3cret-value"), vault.Placement{Kind: vault.Bearer}, []string{"api.example.com"}); err != nil {
		t.Fatal(err)
	}
	req := request(t, "https://evil.example.net/")
	err := b.vault.Apply(t.Context(), "api", req)
	if !errors.Is(err, vault.ErrHostNotAllowed) {
		t.Fatalf("Apply to another host = %v, want ErrHostNotAllowed", err)
	}
	if len(req.Header) != 0 {
		t.Fatalf("a refused Apply touched the request: %v", req.Header)
	}
}

func TestApplyMissingSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := b.vault.Apply(t.Context(), "nope", request(t, "https://api.example.com/"))
	if !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("Apply(missing) = %v, want ErrNotFound", err)
	}
}

func TestSetRefusesBadInputWithoutEchoingTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const value = "ZZ-distinctive-value\n"
	cases := []struct {
		name  string
		p     vault.Placement
		value string
		hosts []string
	}{
		{"bad name", vault.Placement{Kind: vault.Bearer}, "x", []string{"h"}},
		{"andon:root", vault.Placement{Kind: vault.Bearer}, "x", []string{"h"}},
		{"ok", vault.Placement{Kind: vault.Bearer}, value, []string{"h"}},
		{"ok", vault.Placement{Kind: vault.Basic}, "no-colon", []string{"h"}},
		{"ok", vault.Placement{Kind: vault.Bearer}, "", []string{"h"}},
		{"ok", vault.Placement{Kind: vault.Bearer}, "x", nil},
		{"ok", vault.Placement{Kind: vault.Bearer}, "x", []string{"https://h/path"}},
		{"ok", vault.Placement{Kind: vault.Bearer}, "x", []string{"*.example.com"}},
		{"ok", vault.Placement{Kind: vault.Header, Name: "Bad Header"}, "x", []string{"h"}},
		{"ok", vault.Placement{Kind: vault.Header, Name: "Host"}, "x", []string{"h"}},
		{"ok", vault.Placement{Kind: "cookie"}, "x", []string{"h"}},
	}
	for _, c := range cases {
		err := b.vault.Set(t.Context(), c.name, []byte(c.value), c.p, c.hosts)
		if !errors.Is(err, vault.ErrInvalid) {
			t.Errorf("Set(%q, %v, hosts %q) = %v, want ErrInvalid", c.name, c.p, c.hosts, err)
			continue
		}
		if strings.Contains(err.Error(), "distinctive") {
			t.Errorf("the error repeats the value: %v", err)
		}
	}
}

func TestWrongKeyIsAClearErrorThatLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.vault.Set(t.Context(), "api", []byte("s3cret-value"), vault.Placement{Kind: vault.Bearer}, []string{"api.example.com"}); err != nil {
		t.Fatal(err)
	}
	wrong := vault.New(b.store, mustKey(t))
	err := wrong.Apply(t.Context(), "api", request(t, "https://api.example.com/"))
	if !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("Apply under a wrong key = %v, want ErrWrongKey", err)
	}
	if !strings.Contains(err.Error(), b.key.ID()) {
		t.Errorf("the error does not name the key the secret was sealed with: %v", err)
	}
	if err := wrong.Check(t.Context()); !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("Check under a wrong key = %v, want ErrWrongKey", err)
	}
	if _, err := wrong.DeriveKey(t.Context(), "audit hmac v1"); err != nil {
		t.Fatalf("DeriveKey on a vault with no root yet: %v", err)
	}
	// Everything is still there for the right key.
	req := request(t, "https://api.example.com/")
	if err := b.vault.Apply(t.Context(), "api", req); err != nil || req.Header.Get("Authorization") != "Bearer s3cret-value" {
		t.Fatalf("after a wrong key was used, the right key gets %v, %q", err, req.Header.Get("Authorization"))
	}
}

func TestEditedMetadataFailsToOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.vault.Set(t.Context(), "api", []byte("s3cret-value"), vault.Placement{Kind: vault.Bearer}, []string{"api.example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rawDB.Exec(`UPDATE secrets SET hosts = '["api.example.com","evil.example.net"]' WHERE name = 'api'`); err != nil {
		t.Fatal(err)
	}
	req := request(t, "https://evil.example.net/")
	if err := b.vault.Apply(t.Context(), "api", req); !errors.Is(err, vault.ErrCorrupt) {
		t.Fatalf("Apply after the hosts were edited in the store = %v, want ErrCorrupt", err)
	}
	if req.Header.Get("Authorization") != "" {
		t.Fatal("the secret went onto a request for a host added behind the vault's back")
	}
}

func TestEveryWriteUsesAFreshNonce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var sealed [][]byte
	for range 2 {
		if err := b.vault.Set(t.Context(), "api", []byte("same"), vault.Placement{Kind: vault.Bearer}, []string{"h"}); err != nil {
			t.Fatal(err)
		}
		rec, err := b.store.SecretGet(t.Context(), "api")
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, rec.Sealed)
	}
	if string(sealed[0][:12]) == string(sealed[1][:12]) || string(sealed[0]) == string(sealed[1]) {
		t.Fatal("two writes of one value produced the same nonce or ciphertext")
	}
}

func TestRotateKeepsEverySecretReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	values := map[string]string{"a": "value-a", "b": "value-b", "c": "value-c"}
	for name, v := range values {
		if err := b.vault.Set(t.Context(), name, []byte(v), vault.Placement{Kind: vault.Bearer}, []string{"api.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	derived, err := b.vault.DeriveKey(t.Context(), "audit hmac v1")
	if err != nil {
		t.Fatal(err)
	}
	newKey := mustKey(t)
	if err := vault.Rotate(t.Context(), b.store, b.key, newKey); err != nil {
		t.Fatal(err)
	}
	rotated := vault.New(b.store, newKey)
	for name, v := range values {
		req := request(t, "https://api.example.com/")
		if err := rotated.Apply(t.Context(), name, req); err != nil || req.Header.Get("Authorization") != "Bearer "+v {
			t.Fatalf("after rotation %q gives %v, %q", name, err, req.Header.Get("Authorization"))
		}
	}
	again, err := rotated.DeriveKey(t.Context(), "audit hmac v1")
	if err != nil || string(again) != string(derived) {
		t.Fatalf("the derived key changed across rotation (%v)", err)
	}
	if err := b.vault.Check(t.Context()); !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("the old key still opens the vault after rotation: %v", err)
	}
	if err := vault.Rotate(t.Context(), b.store, b.key, newKey); err != nil {
		t.Fatalf("rotating again to the same key: %v", err)
	}
}

func TestRotateWithAWrongOldKeyChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.vault.Set(t.Context(), "a", []byte("value-a"), vault.Placement{Kind: vault.Bearer}, []string{"h"}); err != nil {
		t.Fatal(err)
	}
	before, _ := b.store.SecretGet(t.Context(), "a")
	err := vault.Rotate(t.Context(), b.store, mustKey(t), mustKey(t))
	if !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("Rotate with a wrong old key = %v, want ErrWrongKey", err)
	}
	after, _ := b.store.SecretGet(t.Context(), "a")
	if string(before.Sealed) != string(after.Sealed) || before.KeyID != after.KeyID {
		t.Fatal("a refused rotation changed the record")
	}
}

func TestDeriveKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k1, err := b.vault.DeriveKey(t.Context(), "one")
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := b.vault.DeriveKey(t.Context(), "two")
	k1again, _ := vault.New(b.store, b.key).DeriveKey(t.Context(), "one")
	if len(k1) != vault.KeySize || string(k1) == string(k2) || string(k1) != string(k1again) {
		t.Fatal("derived keys must be 32 bytes, differ per label and be stable")
	}
	infos, err := b.vault.List(t.Context())
	if err != nil || len(infos) != 0 {
		t.Fatalf("List shows the internal root: %v, %v", infos, err)
	}
}

func TestListShowsMetadataOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.vault.Set(t.Context(), "api", []byte("s3cret-value"), mustPlacement(t, "query:key"), []string{"b.example.com", "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	infos, err := b.vault.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Name != "api" || infos[0].Placement.String() != "query:key" ||
		strings.Join(infos[0].Hosts, ",") != "a.example.com,b.example.com" || infos[0].KeyID != b.key.ID() {
		t.Fatalf("List = %+v", infos)
	}
	if err := b.vault.Remove(t.Context(), "api"); err != nil {
		t.Fatal(err)
	}
	if err := b.vault.Remove(t.Context(), "api"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("removing twice = %v, want ErrNotFound", err)
	}
}

func TestKeyEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := mustKey(t)
	path := filepath.Join(dir, "andon.key")
	if err := vault.WriteKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	got, err := vault.ReadKeyFile(path)
	if err != nil || got != k {
		t.Fatalf("ReadKeyFile = %v, %v; want the written key", got, err)
	}
	if err := vault.WriteKeyFile(path, mustKey(t)); err == nil {
		t.Fatal("WriteKeyFile overwrote an existing key file")
	}
	if got, _ := vault.ReadKeyFile(path); got != k {
		t.Fatal("a refused WriteKeyFile changed the key file")
	}
}

func TestBadKeysAreClearErrors(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "not base64!!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		_, err := vault.ParseKey(s)
		if !errors.Is(err, vault.ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey", s, err)
		}
	}
	raw := make([]byte, vault.KeySize)
	for i := range raw {
		raw[i] = byte(i + 1)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		if _, err := vault.ParseKey(" " + enc.EncodeToString(raw) + "\n"); err != nil {
			t.Errorf("ParseKey(%s) = %v", enc.EncodeToString(raw), err)
		}
	}
}
