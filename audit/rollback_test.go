package audit_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// A chainDB is a real store of either backend, with a way in beside it for
// an attacker who can write to the database but has no key.
type chainDB struct {
	store audit.Store
	key   []byte
	log   *audit.Log
	// tamper runs statements directly against the database, with the
	// audit tables' guard triggers out of the way.
	tamper func(t *testing.T, stmts ...string)
	// postgres says the database is PostgreSQL.
	postgres bool
}

// onBothBackends runs fn, in parallel, on a fresh SQLite database and on a
// fresh PostgreSQL schema.
func onBothBackends(t *testing.T, fn func(t *testing.T, db *chainDB)) {
	t.Helper()
	for _, b := range []struct {
		name string
		open func(t *testing.T) *chainDB
	}{{"SQLite", openSQLiteChain}, {"PostgreSQL", openPostgresChain}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.open(t))
		})
	}
}

func newChainDB(store audit.Store, tamper func(t *testing.T, stmts ...string)) *chainDB {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &chainDB{store: store, key: key, log: audit.New(store, key), tamper: tamper}
}

func openSQLiteChain(t *testing.T) *chainDB {
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
	dropped := false
	return newChainDB(store, func(t *testing.T, stmts ...string) {
		t.Helper()
		if !dropped {
			stmts, dropped = append(slices.Clone(sqliteGuards), stmts...), true
		}
		for _, s := range stmts {
			if _, err := raw.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

func openPostgresChain(t *testing.T) *chainDB {
	dsn := pgtest.Schema(t)
	store, err := sqlstore.OpenPostgres(t.Context(), pgtest.WithParams(dsn, map[string]string{"pool_max_conns": "4"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	guards := []string{
		`ALTER TABLE audit_log DISABLE TRIGGER USER`,
		`ALTER TABLE audit_head DISABLE TRIGGER USER`,
		`ALTER TABLE audit_mark DISABLE TRIGGER USER`,
	}
	dropped := false
	db := newChainDB(store, func(t *testing.T, stmts ...string) {
		t.Helper()
		if !dropped {
			stmts, dropped = append(slices.Clone(guards), stmts...), true
		}
		for _, s := range stmts {
			if err := pgtest.Exec(t.Context(), dsn, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
	db.postgres = true
	return db
}

// record appends n rows and returns the last.
func (db *chainDB) record(t *testing.T, n int) audit.Row {
	t.Helper()
	var row audit.Row
	for i := range n {
		var err error
		row, err = db.log.Record(t.Context(), audit.Entry{Action: audit.ActionHTTPCall, Method: "GET", Host: "api.example.com", Path: fmt.Sprintf("/item/%d", i), Status: 200, OK: true, Reason: "completed"})
		if err != nil {
			t.Fatal(err)
		}
	}
	return row
}

// verified verifies the log and returns its head, failing t if it does not
// verify.
func (db *chainDB) verified(t *testing.T) audit.Head {
	t.Helper()
	sum, err := db.log.Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify = %v, want an intact log", err)
	}
	return sum.Head
}

func wantTamperError(t *testing.T, err error, seq int64, words string) {
	t.Helper()
	var te *audit.TamperError
	if !errors.As(err, &te) || !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("Verify = %v, want a TamperError", err)
	}
	if te.Seq != seq || !strings.Contains(te.Problem, words) {
		t.Fatalf("Verify named row %d (%q), want row %d and %q", te.Seq, te.Problem, seq, words)
	}
}

// A log written normally verifies, and its head and mark say how long a
// chain it is and where it begins.
func TestVerifyOfAnIntactLog(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		if sum, err := db.log.Verify(t.Context()); err != nil || sum.Rows != 0 || sum.Head.Seq != 0 {
			t.Fatalf("Verify of a new log = %+v, %v; want ok with 0 rows", sum, err)
		}
		last := db.record(t, 7)
		sum, err := db.log.Verify(t.Context())
		if err != nil || sum.Rows != 7 {
			t.Fatalf("Verify = %+v, %v; want 7 rows", sum, err)
		}
		if h := sum.Head; h.Seq != 7 || h.First != 1 || h.Length != 7 || !slices.Equal(h.MAC, last.MAC) || len(h.Seal) == 0 {
			t.Fatalf("head = %+v; want rows 1 to 7 ending in the last row's MAC, sealed", h)
		}
		hs, err := db.store.AuditHeads(t.Context())
		if err != nil || !slices.Equal(hs.Mark.Seal, sum.Head.Seal) || hs.Mark.Seq != 7 {
			t.Fatalf("heads = %+v, %v; want the mark equal to the head", hs, err)
		}
	})
}

// The reproduction: delete every row and the head. The log is
// empty, but the mark says this key sealed five rows, and Verify says so;
// the rows recorded next do not start again at 1 (which would verify as a
// fresh log) but at 6, and Verify names rows 1 to 5 as deleted.
func TestVerifyFailsOnAnEmptiedLog(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 5)
		db.verified(t)
		db.tamper(t, `DELETE FROM audit_log`, `DELETE FROM audit_head`)
		_, err := db.log.Verify(t.Context())
		wantTamperError(t, err, 1, "the log is empty, but its mark says this key sealed a chain of 5 rows")

		if row := db.record(t, 2); row.Seq != 7 {
			t.Fatalf("the rows after the deletion end at %d; want them numbered on from the mark, to 7", row.Seq)
		}
		_, err = db.log.Verify(t.Context())
		wantTamperError(t, err, 1, "rows 1 to 5 were deleted")
	})
}

// Rows, head and mark all deleted, and a new chain begun at 1 under the same
// key: the store alone now looks like a log that never held more (that is
// the limit documented on Verify), until the mark this key sealed
// reappears (a copy of that one table put back): then Verify sees a chain
// shorter than the one the key sealed. A head kept elsewhere catches it
// without the mark (TestVerifyKeptCatchesWhatTheStoreCannot).
func TestVerifyFailsOnAChainRestartedAtOneUnderTheSameKey(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 5)
		db.verified(t)
		db.tamper(t, `CREATE TABLE old_mark AS SELECT * FROM audit_mark`,
			`DELETE FROM audit_log`, `DELETE FROM audit_head`, `DELETE FROM audit_mark`)
		if row := db.record(t, 3); row.Seq != 3 {
			t.Fatalf("the new chain ends at %d, want 3", row.Seq)
		}
		db.verified(t) // what the store alone cannot tell
		db.tamper(t, `DELETE FROM audit_mark`, `INSERT INTO audit_mark SELECT * FROM old_mark`)
		_, err := db.log.Verify(t.Context())
		wantTamperError(t, err, 4, "the chain ends at row 3, but its mark says this key sealed a chain of 5 rows")

		// Grown to the mark's length, the new chain still is not the one
		// the mark sealed.
		db.tamper(t, `DELETE FROM audit_mark`)
		db.record(t, 2)
		db.tamper(t, `DELETE FROM audit_mark`, `INSERT INTO audit_mark SELECT * FROM old_mark`)
		_, err = db.log.Verify(t.Context())
		wantTamperError(t, err, 5, "the chain restarted under the same key")
	})
}

// kept exports the log's head as text and reads it back, as an operator
// keeping it elsewhere would.
func (db *chainDB) kept(t *testing.T) audit.Head {
	t.Helper()
	text, err := db.verified(t).MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var h audit.Head
	if err := h.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	return h
}

// A kept head still fits a log that has grown since.
func TestVerifyKeptOfALogThatGrew(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 5)
		kept := db.kept(t)
		db.record(t, 3)
		sum, err := db.log.VerifyKept(t.Context(), kept)
		if err != nil || sum.Rows != 8 {
			t.Fatalf("VerifyKept = %+v, %v; want ok with 8 rows", sum, err)
		}
	})
}

// The whole store put back to an older copy of itself verifies on its own;
// a head kept since says rows are missing.
func TestVerifyKeptCatchesARollbackToAnOlderCopy(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 3)
		db.tamper(t, `CREATE TABLE old_head AS SELECT * FROM audit_head`, `CREATE TABLE old_mark AS SELECT * FROM audit_mark`)
		db.record(t, 2)
		kept := db.kept(t)
		db.record(t, 1)
		db.tamper(t, `DELETE FROM audit_log WHERE seq > 3`,
			`DELETE FROM audit_head`, `INSERT INTO audit_head SELECT * FROM old_head`,
			`DELETE FROM audit_mark`, `INSERT INTO audit_mark SELECT * FROM old_mark`)
		db.verified(t) // what the store alone cannot tell
		_, err := db.log.VerifyKept(t.Context(), kept)
		wantTamperError(t, err, 4, "the log ends at row 3, but the kept head says this key sealed row 5")
	})
}

// Rows, head and mark all deleted and a new chain begun under the same key:
// shorter or longer than the kept head, it is not the chain that head
// sealed.
func TestVerifyKeptCatchesAnEmptiedAndRestartedLog(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 5)
		kept := db.kept(t)
		db.tamper(t, `DELETE FROM audit_log`, `DELETE FROM audit_head`, `DELETE FROM audit_mark`)
		db.record(t, 2)
		db.verified(t) // what the store alone cannot tell
		_, err := db.log.VerifyKept(t.Context(), kept)
		wantTamperError(t, err, 3, "the log ends at row 2, but the kept head says this key sealed row 5")
		db.record(t, 4)
		_, err = db.log.VerifyKept(t.Context(), kept)
		wantTamperError(t, err, 5, "not the row the kept head sealed")
	})
}

// A head kept from a log under another key (the vault's key root replaced,
// so that a new key chains a new log) does not fit, before any row is read.
func TestVerifyKeptRefusesAHeadOfAnotherKey(t *testing.T) {
	t.Parallel()
	db := openSQLiteChain(t)
	db.record(t, 2)
	kept := db.kept(t)
	other := make([]byte, 32)
	_, err := audit.New(db.store, other).VerifyKept(t.Context(), kept)
	wantTamperError(t, err, 2, "the kept head's seal does not match this log's key")
	kept.Seq = 1 // an edited kept head
	_, err = db.log.VerifyKept(t.Context(), kept)
	wantTamperError(t, err, 1, "the kept head's seal does not match")
}

// The mark is checked like the head: edited, deleted alone, or moved back,
// it no longer fits.
func TestVerifyCatchesATamperedMark(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		stmts []string
		seq   int64
		words string
	}{
		"edited":     {[]string{`UPDATE audit_mark SET length = 9`}, 5, "the mark's seal does not match"},
		"deleted":    {[]string{`DELETE FROM audit_mark`}, 5, "the mark is missing"},
		"moved back": {[]string{`DELETE FROM audit_mark`, `INSERT INTO audit_mark SELECT * FROM old_mark`}, 4, "the mark ends at row 3, behind the head at row 5"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openSQLiteChain(t)
			db.record(t, 3)
			db.tamper(t, `CREATE TABLE old_mark AS SELECT * FROM audit_mark`)
			db.record(t, 2)
			db.tamper(t, tc.stmts...)
			_, err := db.log.Verify(t.Context())
			wantTamperError(t, err, tc.seq, tc.words)
		})
	}
}

// A database migrated from before heads recorded their first sequence and
// length holds a head under the old seal and no mark. It verifies, and the
// next append writes the new head and the mark.
func TestVerifyAcceptsAHeadSealedBeforeMarks(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		last := db.record(t, 3)
		v1 := audit.HeadSealV1(db.key, 3, last.MAC)
		db.tamper(t, `DELETE FROM audit_mark`,
			fmt.Sprintf(`UPDATE audit_head SET first_seq = 0, length = 0, seal = %s`, hexLiteral(db, v1)))
		if h := db.verified(t); h.First != 0 || h.Length != 0 || h.Seq != 3 {
			t.Fatalf("head = %+v; want the old head as it is", h)
		}
		db.record(t, 1)
		if h := db.verified(t); h.First != 1 || h.Length != 4 || h.Seq != 4 {
			t.Fatalf("head after an append = %+v; want rows 1 to 4", h)
		}
		hs, err := db.store.AuditHeads(t.Context())
		if err != nil || hs.Mark.Seq != 4 {
			t.Fatalf("heads = %+v, %v; want the mark written", hs, err)
		}
	})
}

// hexLiteral spells b as a blob literal of db's dialect.
func hexLiteral(db *chainDB, b []byte) string {
	if db.postgres {
		return fmt.Sprintf(`'\x%x'::bytea`, b)
	}
	return fmt.Sprintf(`X'%x'`, b)
}

// appendingStore records one more row through log the first time Verify
// reads rows: an append that lands while Verify runs.
type appendingStore struct {
	audit.Store
	log  **audit.Log
	once bool
	t    *testing.T
}

func (s *appendingStore) AuditRows(ctx context.Context, q audit.Query) ([]audit.Row, error) {
	rows, err := s.Store.AuditRows(ctx, q)
	if !s.once {
		s.once = true
		if _, err := (*s.log).Record(ctx, audit.Entry{Action: audit.ActionHTTPCall, Reason: "meanwhile"}); err != nil {
			s.t.Error(err)
		}
	}
	return rows, err
}

// Rows appended while Verify runs are not taken for tampering: Verify checks
// the log as it was when it read the head and the mark.
func TestVerifyWhileRowsAreAppended(t *testing.T) {
	t.Parallel()
	onBothBackends(t, func(t *testing.T, db *chainDB) {
		db.record(t, 4)
		var log *audit.Log
		store := &appendingStore{Store: db.store, log: &log, t: t}
		log = audit.New(store, db.key)
		sum, err := log.Verify(t.Context())
		if err != nil || sum.Rows != 4 {
			t.Fatalf("Verify with an append under way = %+v, %v; want the 4 rows it began with", sum, err)
		}
		if h := db.verified(t); h.Seq != 5 {
			t.Fatalf("after it: head %+v, want row 5", h)
		}
	})
}

// A head's text form reads back as the same head; anything else is
// ErrMalformedHead.
func TestHeadText(t *testing.T) {
	t.Parallel()
	h := audit.Head{Seq: 42, First: 1, Length: 42, MAC: []byte{0xde, 0xad}, Seal: []byte{0xbe, 0xef}}
	text, err := h.MarshalText()
	if err != nil || string(text) != "seq=42 first=1 length=42 mac=dead seal=beef" {
		t.Fatalf("MarshalText = %q, %v", text, err)
	}
	var back audit.Head
	if err := back.UnmarshalText(append(text, '\n')); err != nil || back.Seq != 42 || back.First != 1 || back.Length != 42 ||
		!slices.Equal(back.MAC, h.MAC) || !slices.Equal(back.Seal, h.Seal) {
		t.Fatalf("UnmarshalText = %+v, %v; want %+v", back, err, h)
	}
	for _, bad := range []string{"", "seq=42", "seq=x first=1 length=42 mac=dead seal=beef", "first=1 seq=42 length=42 mac=dead seal=beef", "seq=42 first=1 length=42 mac=zz seal=beef"} {
		if err := back.UnmarshalText([]byte(bad)); !errors.Is(err, audit.ErrMalformedHead) {
			t.Errorf("UnmarshalText(%q) = %v, want ErrMalformedHead", bad, err)
		}
	}
}
