package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
)

// tamperSQLite runs statements on a SQLite database directly, with the
// audit tables' guard triggers dropped first, as someone with write access
// to the file and no key would.
func tamperSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	guards := []string{
		`DROP TRIGGER audit_log_no_update`, `DROP TRIGGER audit_log_no_delete`,
		`DROP TRIGGER audit_head_no_delete`, `DROP TRIGGER audit_head_no_rollback`,
		`DROP TRIGGER audit_mark_no_delete`, `DROP TRIGGER audit_mark_no_rollback`,
	}
	for _, s := range append(guards, stmts...) {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// setSecrets leaves n audit rows, one per secret set.
func (d *storeDir) setSecrets(t *testing.T, prefix string, n int) {
	t.Helper()
	for i := range n {
		d.andon(t, "tok", "secret", "set", fmt.Sprintf("%s%d", prefix, i), "--host", "h").want(t, exitOK, "")
	}
}

// audit head prints the verified head as one line; verify --head checks the
// log against it, given as the line or as a file, and fails once the
// database was emptied and begun again, which verify alone cannot see.
func TestAuditHeadIsKeptAndCheckedAgainst(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "", "audit", "head").want(t, exitFailure, "audit head: the audit log is empty")
	d.setSecrets(t, "s", 3)
	out := d.andon(t, "", "audit", "head")
	if out.code != exitOK || out.stderr != "" || strings.Count(out.stdout, "\n") != 1 {
		t.Fatalf("audit head: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	line := strings.TrimSpace(out.stdout)
	var head audit.Head
	if err := head.UnmarshalText([]byte(line)); err != nil || head.Seq != 3 || head.First != 1 || head.Length != 3 || len(head.MAC) != 32 || len(head.Seal) != 32 {
		t.Fatalf("audit head printed %q (%+v, %v); want rows 1 to 3 with a MAC and a seal", line, head, err)
	}
	if !strings.HasPrefix(line, "seq=3 first=1 length=3 mac=") {
		t.Fatalf("audit head printed %q", line)
	}

	d.setSecrets(t, "t", 1)
	file := filepath.Join(d.dir, "kept-head")
	if err := os.WriteFile(file, []byte(out.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kept := range []string{line, file} {
		ok := d.andon(t, "", "audit", "verify", "--head", kept)
		if ok.code != exitOK || !strings.Contains(ok.stdout, "ok: 4 rows verified") || !strings.Contains(ok.stdout, "the kept head (row 3) is part of the chain") {
			t.Fatalf("audit verify --head %s: exit %d\n%s%s", kept, ok.code, ok.stdout, ok.stderr)
		}
	}
	d.andon(t, "", "audit", "verify", "--head", "seq=3 first=1").want(t, exitUsage, "--head: neither a head")

	// Rows, head and mark deleted; the next rows begin a new chain at 1.
	tamperSQLite(t, d.db, `DELETE FROM audit_log`, `DELETE FROM audit_head`, `DELETE FROM audit_mark`)
	d.setSecrets(t, "u", 2)
	d.andon(t, "", "audit", "verify").want(t, exitOK, "") // the database alone cannot tell
	d.andon(t, "", "audit", "verify", "--head", file).want(t, exitFailure,
		"audit verify: FAILED: audit: row 3: missing: the log ends at row 2, but the kept head says this key sealed row 3")
}

// An emptied log whose mark remains fails verify, and the rows recorded
// after it are numbered on from the mark.
func TestAuditVerifyFailsOnAnEmptiedLog(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.setSecrets(t, "s", 3)
	d.andon(t, "", "audit", "verify").want(t, exitOK, "")
	tamperSQLite(t, d.db, `DELETE FROM audit_log`, `DELETE FROM audit_head`)
	d.andon(t, "", "audit", "verify").want(t, exitFailure,
		"audit verify: FAILED: audit: row 1: missing: the log is empty, but its mark says this key sealed a chain of 3 rows")
	d.setSecrets(t, "t", 1)
	d.andon(t, "", "audit", "verify").want(t, exitFailure, "row 1: missing: the log begins at row 4 (rows 1 to 3 were deleted)")
	d.andon(t, "", "audit", "head").want(t, exitFailure, "audit head: FAILED")
}
