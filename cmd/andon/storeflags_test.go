package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The commands open a PostgreSQL database as well as a SQLite file: the
// vault, the audit log and the key checks work the same.
func TestSecretsOnPostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, password := testPostgres(t)
	keyFile := filepath.Join(dir, "andon.key")
	cmd := exec.Command(andonBin, "secret", "set", "--db", db, "--key-file", keyFile, "--host", "api.example.com", "tok")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("s3cret-value\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("andon secret set: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "generated a new master key") || (password != "" && strings.Contains(string(out), password)) {
		t.Errorf("andon secret set on a fresh database printed:\n%s", out)
	}
	r := runAndonIn(t, dir, "secret", "list", "--db", db, "--key-file", keyFile)
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, "tok") {
		t.Errorf("andon secret list:\n%s", r.stdout)
	}
	r = runAndonIn(t, dir, "audit", "verify", "--db", db, "--key-file", keyFile)
	r.check(t, exitOK)
	// Without the key, nothing opens, and the message names the database
	// without its password.
	r = runAndonIn(t, dir, "secret", "list", "--db", db, "--key-file", filepath.Join(dir, "missing.key"))
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "holds") || !strings.Contains(r.stderr, redactDSN(db)) || (password != "" && strings.Contains(r.stderr, password)) {
		t.Errorf("andon secret list without the key: %s", r.stderr)
	}
}

// No command prints a PostgreSQL password: not when the server is
// unreachable, not when the URL does not parse.
func TestDBPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-sekrit"
	for _, db := range []string{
		"postgres://andon:" + pw + "@127.0.0.1:1/andon?sslmode=disable&connect_timeout=5",
		"postgresql://andon@127.0.0.1:1/andon?password=" + pw + "&sslmode=disable",
		"postgres://andon:" + pw + "@bad host/andon",
		"postgres://andon:" + pw + "@127.0.0.1:99999/andon",
	} {
		for _, args := range [][]string{
			{"secret", "list", "--db", db},
			{"worker", "--db", db, "--config", "andon.yaml"},
		} {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "andon.yaml"), []byte("servers: []\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runAndonIn(t, dir, args...)
			if r.code != exitFailure || strings.Contains(r.stderr+r.stdout, pw) {
				t.Errorf("andon %s: exit %d, output:\n%s%s", strings.Join(args[:2], " "), r.code, r.stdout, r.stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("andon %s left files behind: %v", args[0], entries)
			}
		}
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:p@h:5432/db?sslmode=disable", "postgres://h:5432/db?sslmode=disable"},
		{"postgresql://u@h/db", "postgresql://h/db"},
		{"postgres://h/db?password=p&sslmode=disable", "postgres://h/db?sslmode=disable"},
		{"postgres://h/db?sslpassword=p", "postgres://h/db"},
		{"postgres://u:p@bad host/db", "postgres://(unparsable URL)"},
		{"andon.db", "andon.db"},
	} {
		f := &storeFlags{db: tc.in}
		if got := f.where(); got != tc.want {
			t.Errorf("where(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The tests choose their databases; an ANDON_DB of the developer's must not
// reach the andon processes they start.
func init() { os.Unsetenv(envDB) }

// ANDON_DB gives --db its default, so a password need not be on the command
// line; -h shows that default without the password, and --db still wins.
func TestDBFromEnvironment(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-from-env"
	dir := t.TempDir()
	run := func(args ...string) result {
		cmd := exec.Command(andonBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), envDB+"=postgres://andon:"+pw+"@127.0.0.1:1/andon?sslmode=disable&connect_timeout=5")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return result{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String()}
	}
	r := run("secret", "list")
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "127.0.0.1:1/andon") || strings.Contains(r.stderr, pw) {
		t.Errorf("andon secret list with %s: %s", envDB, r.stderr)
	}
	r = run("worker", "-h")
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, "(default postgres://127.0.0.1:1/andon?") || strings.Contains(r.stdout+r.stderr, pw) {
		t.Errorf("andon worker -h with %s:\n%s%s", envDB, r.stdout, r.stderr)
	}
	r = run("secret", "list", "--db", filepath.Join(dir, "andon.db"))
	r.check(t, exitOK)
}

// andon migrate creates the schema without a master key, on SQLite and
// PostgreSQL, and says which version it is at; a second run changes nothing.
func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite", true: "postgres"}[pg], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "andon.db")
			if pg {
				db, _ = testPostgres(t)
			}
			for range 2 {
				r := runAndonIn(t, dir, "migrate", "--db", db)
				r.check(t, exitOK)
				if !strings.Contains(r.stdout, "is at schema version 3") {
					t.Errorf("stdout %q", r.stdout)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "andon.key")); err == nil {
				t.Error("migrate wrote a master key")
			}
		})
	}
}
