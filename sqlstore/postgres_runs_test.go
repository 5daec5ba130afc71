package sqlstore_test

import (
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/jackc/pgx/v5"
)

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

// On PostgreSQL a claim passes over a queued run that another transaction
// holds locked (the candidate is selected SKIP LOCKED), so claimers never
// wait for each other: with the oldest run locked, a claim takes the next
// one, and is never seen waiting for the lock.
func TestPostgresClaimPassesOverALockedRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgSchema(t)
	s := openPGAt(t, dsn)
	t0 := time.Now()
	for i, id := range []string{"r1", "r2"} {
		if err := s.RunInsert(ctx, &agent.Run{ID: id, Owner: "alice", CreatedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	tx, blocker, monitor := holdLock(t, dsn, `SELECT pg_backend_pid() FROM runs WHERE id = 'r1' FOR NO KEY UPDATE`)

	type claim struct {
		run *agent.Run
		err error
	}
	claimed := make(chan claim, 1)
	go func() {
		r, err := s.RunClaim(ctx, "w1", t0.Add(time.Hour))
		claimed <- claim{r, err}
	}()
	var got claim
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		select {
		case got = <-claimed:
		default:
			if _, waits := blockedBy(t, monitor, blocker); waits {
				_ = tx.Rollback(ctx) // let it go, then fail
				t.Fatalf("the claim waits for the locked run r1; then it took %+v", <-claimed)
			}
			if time.Now().After(deadline) {
				t.Fatal("the claim neither returned nor waited")
			}
			continue
		}
		break
	}
	if got.err != nil || got.run == nil || got.run.ID != "r2" {
		t.Fatalf("RunClaim with r1 locked = %+v, %v; want r2", got.run, got.err)
	}
}
