package audit_test

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/sqlstore"
)

type testBundle struct {
	log   *audit.Log
	store *sqlstore.Store
	rawDB *sql.DB
	key   []byte
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
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &testBundle{log: audit.New(store, key), store: store, rawDB: raw, key: key}
}

// fill records n rows and verifies them.
func (b *testBundle) fill(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		_, err := b.log.Record(t.Context(), audit.Entry{
			Action: audit.ActionHTTPCall, Purpose: "test", RunID: fmt.Sprintf("run-%d", i%2),
			Method: "GET", Host: "api.example.com", Path: fmt.Sprintf("/item/%d", i),
			Status: 200, OK: true, Reason: "completed", Duration: time.Duration(i) * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sum, err := b.log.Verify(t.Context())
	if err != nil || sum.Rows != int64(n) {
		t.Fatalf("Verify of an intact log = %+v, %v", sum, err)
	}
}

// sqliteGuards are the triggers that keep the audit tables append-only
// against accidents.
var sqliteGuards = []string{
	`DROP TRIGGER audit_log_no_update`, `DROP TRIGGER audit_log_no_delete`,
	`DROP TRIGGER audit_head_no_delete`, `DROP TRIGGER audit_head_no_rollback`,
	`DROP TRIGGER audit_mark_no_delete`, `DROP TRIGGER audit_mark_no_rollback`,
}

// tamper runs SQL directly against the database, as an attacker with write
// access would, after dropping the append-only triggers.
func (b *testBundle) tamper(t *testing.T, stmts ...string) {
	t.Helper()
	stmts = append(slices.Clone(sqliteGuards), stmts...)
	for _, s := range stmts {
		if _, err := b.rawDB.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func wantTampered(t *testing.T, b *testBundle, seq int64, words string) {
	t.Helper()
	_, err := b.log.Verify(t.Context())
	var te *audit.TamperError
	if !errors.As(err, &te) || !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("Verify = %v, want a TamperError", err)
	}
	if te.Seq != seq || !strings.Contains(te.Problem, words) {
		t.Fatalf("Verify named row %d (%q), want row %d and %q", te.Seq, te.Problem, seq, words)
	}
}

func TestVerifyCatchesAnEditedRow(t *testing.T) {
	t.Parallel()
	for _, edit := range []string{
		`UPDATE audit_log SET status = 500 WHERE seq = 3`,
		`UPDATE audit_log SET ok = 0 WHERE seq = 3`,
		`UPDATE audit_log SET action = 'http_call_cancelled_before_send' WHERE seq = 3`,
		`UPDATE audit_log SET path = '/elsewhere' WHERE seq = 3`,
		`UPDATE audit_log SET run_id = 'run-x' WHERE seq = 3`,
		`UPDATE audit_log SET time_ns = time_ns + 1 WHERE seq = 3`,
	} {
		t.Run(edit, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fill(t, 5)
			b.tamper(t, edit)
			wantTampered(t, b, 3, "edited")
		})
	}
}

func TestVerifyCatchesADeletedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	b.tamper(t, `DELETE FROM audit_log WHERE seq = 3`)
	wantTampered(t, b, 3, "deleted")
}

func TestVerifyCatchesADeletedRowRenumbered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	b.tamper(t, `DELETE FROM audit_log WHERE seq = 3`, `UPDATE audit_log SET seq = seq - 1 WHERE seq > 3`)
	wantTampered(t, b, 3, "edited")
}

func TestVerifyCatchesRowsCutOffTheEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	b.tamper(t, `DELETE FROM audit_log WHERE seq >= 4`)
	wantTampered(t, b, 4, "cut off")
}

func TestVerifyCatchesAHeadMovedBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	b.tamper(t, `DELETE FROM audit_log WHERE seq = 5`,
		`UPDATE audit_head SET seq = 4, mac = (SELECT mac FROM audit_log WHERE seq = 4)`)
	wantTampered(t, b, 4, "head")
}

func TestVerifyCatchesSwappedRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	// Exchange the contents of rows 2 and 4, MACs included, keeping their
	// positions: each row's MAC is now valid for some position, not this one.
	cols := "time_ns, action, purpose, run_id, method, host, path, status, ok, reason, duration_ns, mac"
	b.tamper(t,
		`CREATE TABLE tmp AS SELECT seq, `+cols+` FROM audit_log WHERE seq IN (2, 4)`,
		`UPDATE audit_log SET (`+cols+`) = (SELECT `+cols+` FROM tmp WHERE tmp.seq = 6 - audit_log.seq) WHERE seq IN (2, 4)`,
	)
	wantTampered(t, b, 2, "swapped")
}

func TestVerifyCatchesSwappedSequenceNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 5)
	b.tamper(t,
		`UPDATE audit_log SET seq = -2 WHERE seq = 2`,
		`UPDATE audit_log SET seq = 2 WHERE seq = 4`,
		`UPDATE audit_log SET seq = 4 WHERE seq = -2`,
	)
	wantTampered(t, b, 2, "swapped")
}

func TestVerifyCatchesARowAddedOutsideTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 3)
	b.tamper(t, `INSERT INTO audit_log SELECT 4, time_ns, action, purpose, run_id, method, host, path, status, ok, reason, duration_ns, mac FROM audit_log WHERE seq = 3`)
	wantTampered(t, b, 4, "added outside the log")
}

func TestVerifyWithAnotherKeyFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 2)
	other := make([]byte, 32)
	_, err := audit.New(b.store, other).Verify(t.Context())
	if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "key") {
		t.Fatalf("Verify under another key = %v, want row 1 named with a hint about the key", err)
	}
}

func TestTheStoreRefusesUpdatesAndDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fill(t, 2)
	for _, s := range []string{`UPDATE audit_log SET status = 1`, `DELETE FROM audit_log`} {
		if _, err := b.rawDB.Exec(s); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s = %v, want the append-only trigger to refuse it", s, err)
		}
	}
	for _, s := range []string{`UPDATE audit_head SET seq = 1`, `DELETE FROM audit_head`, `UPDATE audit_mark SET seq = 1`, `DELETE FROM audit_mark`} {
		if _, err := b.rawDB.Exec(s); err == nil || !strings.Contains(err.Error(), "never goes back") {
			t.Errorf("%s = %v, want a trigger to refuse it", s, err)
		}
	}
}

func TestRecordDropsQueryStrings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	row, err := b.log.Record(t.Context(), audit.Entry{Action: audit.ActionHTTPCall, Path: "/v1/x?api_key=s3cret#frag"})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := b.log.List(t.Context(), audit.Query{})
	if row.Path != "/v1/x" || len(rows) != 1 || rows[0].Path != "/v1/x" {
		t.Fatalf("stored path %q / %+v, want /v1/x", row.Path, rows)
	}
	if !bytes.Equal(rows[0].MAC, row.MAC) || !rows[0].Time.Equal(row.Time) {
		t.Fatal("the row listed differs from the row recorded")
	}
}

func TestNewPanicsOnAShortKey(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a 16-byte key")
		}
	}()
	audit.New(nil, make([]byte, 16))
}
