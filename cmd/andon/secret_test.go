package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// storeDir is a directory holding one test's database and key file.
type storeDir struct {
	dir, db, keyFile string
}

// auditLog opens the directory's audit log, as andon does, for the test to
// write rows to or read them from; it is closed with the test.
func (d *storeDir) auditLog(t *testing.T) *audit.Log {
	t.Helper()
	key, err := vault.ReadKeyFile(d.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(t.Context(), d.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	auditKey, err := vault.New(st, key).DeriveKey(t.Context(), auditKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	return audit.New(st, auditKey)
}

func newStoreDir(t *testing.T) *storeDir {
	t.Helper()
	dir := t.TempDir()
	return &storeDir{dir: dir, db: filepath.Join(dir, "andon.db"), keyFile: filepath.Join(dir, "andon.key")}
}

type cliRun struct {
	code           int
	stdout, stderr string
}

// andon runs andon in-process with the directory's --db and --key-file
// appended, and stdin as standard input.
func (d *storeDir) andon(t *testing.T, stdin string, args ...string) cliRun {
	t.Helper()
	return d.andonWithKey(t, d.keyFile, stdin, args...)
}

func (d *storeDir) andonWithKey(t *testing.T, keyFile, stdin string, args ...string) cliRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--db", d.db, "--key-file", keyFile)
	code := run(t.Context(), args, strings.NewReader(stdin), &stdout, &stderr)
	return cliRun{code, stdout.String(), stderr.String()}
}

func (r cliRun) want(t *testing.T, code int, stderrHas string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stderr, stderrHas) {
		t.Fatalf("exit %d, want %d with %q on stderr\nstdout: %s\nstderr: %s", r.code, code, stderrHas, r.stdout, r.stderr)
	}
}

// applied opens the database with the key file and returns the header the
// secret name puts on a request to host.
func (d *storeDir) applied(t *testing.T, keyFile, name, host, header string) (string, error) {
	t.Helper()
	key, err := vault.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(t.Context(), d.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+host+"/", nil)
	err = vault.New(st, key).Apply(t.Context(), name, req)
	return req.Header.Get(header), err
}

func TestSecretLifecycle(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "tok-1\n", "secret", "set", "gh", "--host", "api.github.com", "--placement", "header:X-Token").
		want(t, exitOK, "generated a new master key")
	fi, err := os.Stat(d.keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
	}
	d.andon(t, "v-2", "secret", "set", "other", "--host", "a.example,b.example").want(t, exitOK, `secret "other" stored`)

	list := d.andon(t, "", "secret", "list")
	list.want(t, exitOK, "")
	if list.stdout != "gh\theader:X-Token\tapi.github.com\nother\tbearer\ta.example,b.example\n" {
		t.Fatalf("secret list printed:\n%s", list.stdout)
	}
	if got, err := d.applied(t, d.keyFile, "gh", "api.github.com", "X-Token"); err != nil || got != "tok-1" {
		t.Fatalf("the stored value puts %q (%v), want tok-1 without the newline", got, err)
	}

	d.andon(t, "", "secret", "rm", "gh").want(t, exitOK, "")
	d.andon(t, "", "secret", "rm", "gh").want(t, exitFailure, "secret not found")
	if list := d.andon(t, "", "secret", "list"); list.stdout != "other\tbearer\ta.example,b.example\n" {
		t.Fatalf("after rm, secret list printed:\n%s", list.stdout)
	}
}

func TestSecretSetTakesNoValueFromTheCommandLine(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "", "secret", "set", "gh", "tok-on-argv", "--host", "h").want(t, exitUsage, "never from the command line")
	d.andon(t, "", "secret", "set", "gh", "--host", "h").want(t, exitFailure, "standard input was empty")
	d.andon(t, "x", "secret", "set", "gh").want(t, exitUsage, "--host is required")
	d.andon(t, "x", "secret", "set", "gh", "--host", "h", "--placement", "cookie").want(t, exitUsage, "unknown placement")
	if _, err := os.Stat(d.db); err == nil {
		if list := d.andon(t, "", "secret", "list"); list.stdout != "" {
			t.Fatalf("a refused set stored something:\n%s", list.stdout)
		}
	}
}

func TestAWrongOrMissingKeyIsAClearErrorThatLosesNothing(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "tok-1", "secret", "set", "gh", "--host", "api.github.com").want(t, exitOK, "")

	missing := filepath.Join(d.dir, "missing.key")
	d.andonWithKey(t, missing, "", "secret", "list").want(t, exitFailure, "no master key")
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a key was generated for a database that already holds secrets")
	}

	other := filepath.Join(d.dir, "other.key")
	k, _ := vault.NewKey()
	if err := vault.WriteKeyFile(other, k); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"secret", "list"},
		{"secret", "rotate-key"},
		{"audit", "verify"},
	} {
		r := d.andonWithKey(t, other, "x", args...)
		r.want(t, exitFailure, "wrong master key")
	}
	d.andonWithKey(t, other, "x", "secret", "set", "new", "--host", "h").want(t, exitFailure, "wrong master key")
	if _, err := os.Stat(other + ".new"); err == nil {
		t.Fatal("a refused rotation left a .new key file")
	}
	if got, err := d.applied(t, d.keyFile, "gh", "api.github.com", "Authorization"); err != nil || got != "Bearer tok-1" {
		t.Fatalf("after the wrong keys, the right key gets %q, %v", got, err)
	}
}

func TestRotateKeyKeepsEverySecret(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	for i := range 3 {
		d.andon(t, fmt.Sprintf("value-%d", i), "secret", "set", fmt.Sprintf("s%d", i), "--host", "h.example").want(t, exitOK, "")
	}
	before, _ := os.ReadFile(d.keyFile)
	oldKey, _ := vault.ReadKeyFile(d.keyFile)
	d.andon(t, "", "secret", "rotate-key").want(t, exitOK, "rotated the master key")
	after, _ := os.ReadFile(d.keyFile)
	if bytes.Equal(before, after) {
		t.Fatal("the key file did not change")
	}
	for i := range 3 {
		got, err := d.applied(t, d.keyFile, fmt.Sprintf("s%d", i), "h.example", "Authorization")
		if err != nil || got != fmt.Sprintf("Bearer value-%d", i) {
			t.Fatalf("after rotation s%d gives %q, %v", i, got, err)
		}
	}
	st, _ := sqlstore.Open(t.Context(), d.db)
	defer st.Close()
	if err := vault.New(st, oldKey).Check(t.Context()); err == nil {
		t.Fatal("the old key still opens the database")
	}
	d.andon(t, "", "audit", "verify").want(t, exitOK, "")
}

// TestMasterKeyFromTheEnvironment cannot run in parallel: it sets
// ANDON_MASTER_KEY.
func TestMasterKeyFromTheEnvironment(t *testing.T) {
	d := newStoreDir(t)
	k, _ := vault.NewKey()
	path := filepath.Join(d.dir, "env.key")
	_ = vault.WriteKeyFile(path, k)
	encoded, _ := os.ReadFile(path)
	t.Setenv(vault.EnvMasterKey, strings.TrimSpace(string(encoded)))
	d.andon(t, "tok", "secret", "set", "gh", "--host", "h").want(t, exitOK, "")
	if _, err := os.Stat(d.keyFile); err == nil {
		t.Fatal("a key file was generated although the key came from the environment")
	}
	if got, err := d.applied(t, path, "gh", "h", "Authorization"); err != nil || got != "Bearer tok" {
		t.Fatalf("got %q, %v", got, err)
	}
	t.Setenv(vault.EnvMasterKey, "not-a-key")
	d.andon(t, "", "secret", "list").want(t, exitFailure, "ANDON_MASTER_KEY: vault: bad master key")
}

func TestAuditListAndVerify(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "tok", "secret", "set", "gh", "--host", "h").want(t, exitOK, "")
	log := d.auditLog(t)
	for _, e := range []audit.Entry{
		{Action: audit.ActionHTTPCall, RunID: "r1", Method: "POST", Host: "mcp.example", Path: "/mcp", Status: 200, OK: true, Reason: "completed"},
		{Action: audit.ActionHTTPCallCancelled, RunID: "r1", Method: "POST", Host: "mcp.example", Path: "/mcp", Reason: "cancelled in flight"},
		{Action: audit.ActionHTTPCallCancelledBeforeSend, RunID: "r2", Method: "POST", Host: "mcp.example", Path: "/mcp", Reason: "cancelled before send"},
	} {
		if _, err := log.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	r1 := d.andon(t, "", "audit", "list", "--run", "r1")
	if r1.code != exitOK || strings.Count(r1.stdout, "\n") != 3 || strings.Contains(r1.stdout, "r2") {
		t.Fatalf("audit list --run r1:\n%s%s", r1.stdout, r1.stderr)
	}
	cancelled := d.andon(t, "", "audit", "list", "--action", "http_call_cancelled")
	if strings.Count(cancelled.stdout, "\n") != 2 || !strings.Contains(cancelled.stdout, "cancelled in flight") {
		t.Fatalf("audit list --action http_call_cancelled:\n%s", cancelled.stdout)
	}
	ok := d.andon(t, "", "audit", "verify")
	if ok.code != exitOK || !strings.HasPrefix(ok.stdout, "ok: 4 rows verified") {
		t.Fatalf("audit verify: %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
}

func TestAuditVerifyNamesTheFirstBadRow(t *testing.T) {
	t.Parallel()
	cols := "time_ns, action, purpose, run_id, method, host, path, status, ok, reason, duration_ns, mac"
	for name, tc := range map[string]struct {
		stmts []string
		want  string
	}{
		"edited":  {[]string{`UPDATE audit_log SET ok = 0 WHERE seq = 2`}, "row 2: MAC does not match"},
		"deleted": {[]string{`DELETE FROM audit_log WHERE seq = 2`}, "row 2: missing"},
		"swapped": {[]string{
			`CREATE TABLE tmp AS SELECT seq, ` + cols + ` FROM audit_log WHERE seq IN (2, 3)`,
			`UPDATE audit_log SET (` + cols + `) = (SELECT ` + cols + ` FROM tmp WHERE tmp.seq = 5 - audit_log.seq) WHERE seq IN (2, 3)`,
		}, "row 2: MAC does not match"},
		"cut off": {[]string{`DELETE FROM audit_log WHERE seq = 4`}, "row 4: missing"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newStoreDir(t)
			for i := range 4 {
				d.andon(t, "tok", "secret", "set", fmt.Sprintf("s%d", i), "--host", "h").want(t, exitOK, "")
			}
			d.andon(t, "", "audit", "verify").want(t, exitOK, "")
			db, err := sql.Open("sqlite", d.db)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, s := range append([]string{`DROP TRIGGER audit_log_no_update`, `DROP TRIGGER audit_log_no_delete`}, tc.stmts...) {
				if _, err := db.ExecContext(context.Background(), s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			d.andon(t, "", "audit", "verify").want(t, exitFailure, tc.want)
		})
	}
}
