package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
)

// TestAuditListIsNotPadded: audit list writes each row on its own line as
// long as the row is, whatever the widest cell of the log: one 20 KB path
// among 1,000 rows makes one long line, not 1,000.
func TestAuditListIsNotPadded(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	d.andon(t, "tok", "secret", "set", "gh", "--host", "h").want(t, exitOK, "")
	log := d.auditLog(t)
	const n = 1000
	wide := "/" + strings.Repeat("w", 20_000)
	for i := range n {
		path := fmt.Sprintf("/call/%d", i)
		if i == n/2 {
			path = wide
		}
		if _, err := log.Record(t.Context(), audit.Entry{Action: audit.ActionHTTPCall, RunID: "run_1", Method: "POST",
			Host: "mcp.example", Path: path, Status: 200, OK: true, Reason: "completed"}); err != nil {
			t.Fatal(err)
		}
	}
	r := d.andon(t, "", "audit", "list", "--run", "run_1")
	r.want(t, exitOK, "")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != n+1 {
		t.Fatalf("%d lines, want a header and %d rows", len(lines), n)
	}
	for i, line := range lines[1:] {
		want := fmt.Sprintf("/call/%d", i)
		if i == n/2 {
			want = wide
		}
		if !strings.Contains(line, "  "+want+"  ") || !strings.HasPrefix(strings.TrimSpace(line), fmt.Sprint(i+2)) {
			t.Fatalf("row %d: %.200q, want seq %d and path %.40q", i, line, i+2, want)
		}
		if i != n/2 && len(line) > 300 {
			t.Fatalf("row %d is %d bytes long: padded to the widest cell of another row", i, len(line))
		}
	}
	if len(r.stdout) > n*300+len(wide) {
		t.Errorf("audit list wrote %d bytes for %d rows", len(r.stdout), n)
	}
}
