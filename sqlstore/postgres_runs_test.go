package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/jackc/pgx/v5"
)

// RunStatuses sends its ids as one text[] parameter, so PostgreSQL's limit
// of 65535 bound parameters does not apply and the watcher's poll stays one
// query.
func TestPostgresRunStatusesTakesAnyNumberOfIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openPG(t)
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"r1"}
	for i := range 70_000 {
		ids = append(ids, fmt.Sprintf("gone-%d", i))
	}
	got, err := s.RunStatuses(ctx, ids)
	if err != nil || len(got) != 1 || got["r1"] != agent.StatusQueued {
		t.Fatalf("RunStatuses(%d ids) = %v, %v; want r1 queued", len(ids), got, err)
	}
}

// The audit log refuses edits, deletes and truncation, and its head and mark
// never go back, as on SQLite; only the MAC chain and the seals catch
// someone who drops the triggers first.
func TestPostgresAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgSchema(t)
	s := openPGAt(t, dsn)
	if err := s.AuditAppend(ctx, func(audit.Heads) (audit.Row, audit.Head, error) {
		row := audit.Row{Seq: 1, Entry: audit.Entry{Action: audit.ActionHTTPCall, Path: "/a"}, MAC: []byte("mac")}
		return row, audit.Head{Seq: 1, First: 1, Length: 1, MAC: row.MAC, Seal: []byte("seal")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`UPDATE audit_log SET path = '/edited'`, `DELETE FROM audit_log`, `TRUNCATE audit_log`,
		`UPDATE audit_head SET seq = 0`, `DELETE FROM audit_head`, `TRUNCATE audit_head`,
		`UPDATE audit_mark SET seq = 0`, `DELETE FROM audit_mark`, `TRUNCATE audit_mark`,
	} {
		if _, err := conn.Exec(ctx, stmt); err == nil {
			t.Errorf("%s succeeded", stmt)
		}
	}
	if hs, err := s.AuditHeads(ctx); err != nil || hs.Head.Seq != 1 || hs.Mark.Seq != 1 {
		t.Fatalf("after the refused edits: heads %+v, %v; want head and mark at row 1", hs, err)
	}
	rows, err := s.AuditRows(ctx, audit.Query{})
	if err != nil || len(rows) != 1 || rows[0].Path != "/a" {
		t.Fatalf("after the refused edits: %+v, %v; want the one row as written", rows, err)
	}
}
