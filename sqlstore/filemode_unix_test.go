//go:build unix

package sqlstore_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// The database, its -wal and its -shm are created 0600, whatever the umask:
// other local users read no prompt, result, secret or audit row. Not
// parallel: the umask is the process's.
func TestDatabaseFilesAreCreatedOwnerOnly(t *testing.T) {
	for _, umask := range []int{0o000, 0o022, 0o277} {
		t.Run(fmt.Sprintf("umask %#o", umask), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "andon.db")
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			s, err := sqlstore.Open(t.Context(), path, sqlstore.OpenLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// A write, so that the -wal and -shm files certainly exist.
			if err := s.SecretPut(t.Context(), vault.Record{Name: "n", Placement: "bearer", KeyID: "k", Sealed: []byte("x")}, false); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if perm := fi.Mode().Perm(); perm != 0o600 {
					t.Errorf("%s has mode %#o under umask %#o, want 0600", filepath.Base(p), perm, umask)
				}
			}
		})
	}
}

// An existing database open to other users is left as it is, with a
// warning naming the file and its mode; a private one opens silently.
func TestOpenWarnsOfADatabaseOpenToOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func(path string) string {
		t.Helper()
		var logs bytes.Buffer
		s, err := sqlstore.Open(t.Context(), path, sqlstore.OpenLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	shared := filepath.Join(dir, "shared.db")
	if err := os.WriteFile(shared, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o644); err != nil {
		t.Fatal(err)
	}
	if logs := open(shared); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, shared) || !strings.Contains(logs, "mode=0644") {
		t.Fatalf("opening a 0644 database logged %q; want a warning naming it and its mode", logs)
	}
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the existing database's mode changed: %v, %v", fi.Mode(), err)
	}
	private := filepath.Join(dir, "private.db")
	for range 2 { // created, then existing
		if logs := open(private); logs != "" {
			t.Fatalf("opening a private database logged %q", logs)
		}
	}
}
