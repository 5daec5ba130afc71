package vault_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/vault"
)

func TestMissingKeyFileIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := vault.ReadKeyFile(filepath.Join(t.TempDir(), "absent.key"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadKeyFile(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestKeyFileReadableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "andon.key")
	if err := vault.WriteKeyFile(path, mustKey(t)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vault.ReadKeyFile(path); !errors.Is(err, vault.ErrBadKey) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("ReadKeyFile(0644) = %v, want ErrBadKey saying chmod 600", err)
	}
}

// TestKeyNeverPrints formats a key every way a log line or error might, and
// looks for its bytes in any encoding.
func TestKeyNeverPrints(t *testing.T) {
	t.Parallel()
	k := mustKey(t)
	path := filepath.Join(t.TempDir(), "k")
	if err := vault.WriteKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	encoded, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(encoded)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%d", "%q"} {
		fmt.Fprintf(&out, verb+"\n", k)
		fmt.Fprintf(&out, verb+"\n", struct{ K vault.Key }{k})
	}
	slog.New(slog.NewJSONHandler(&out, nil)).Info("key", "k", k)
	slog.New(slog.NewTextHandler(&out, nil)).Info("key", "k", k)
	printed := out.String()
	for _, form := range []string{strings.TrimSpace(string(encoded)), hex.EncodeToString(raw), fmt.Sprint(raw), string(raw)} {
		if strings.Contains(printed, form) {
			t.Fatalf("the key's bytes were printed:\n%s", printed)
		}
	}
	if !strings.Contains(printed, k.ID()) {
		t.Fatalf("the key's ID was not printed:\n%s", printed)
	}
}
