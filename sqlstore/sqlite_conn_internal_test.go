package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func openPreparingTest(t *testing.T) *sql.DB {
	t.Helper()
	db, err := openPreparing("file:" + filepath.Join(t.TempDir(), "kept.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// kept returns how many statements the database's one connection keeps.
func kept(t *testing.T, db *sql.DB) int {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	if err := conn.Raw(func(dc any) error { n = len(dc.(*preparingConn).stmts); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A statement with arguments is prepared once and run prepared after that,
// inside transactions too; one without (a script, the migrations) is not kept.
func TestSQLiteConnKeepsStatementsPrepared(t *testing.T) {
	db := openPreparingTest(t)
	for i := range 50 {
		var x int
		if err := db.QueryRow(`SELECT x FROM t WHERE x = ?`, i%3+1).Scan(&x); err != nil || x != i%3+1 {
			t.Fatalf("query %d = %d, %v", i, x, err)
		}
		if _, err := db.Exec(`UPDATE t SET x = x WHERE x = ?`, 1); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE t SET x = x WHERE x = ?`, 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := kept(t, db); n != 2 {
		t.Fatalf("the connection keeps %d statements, want 2 (the SELECT and the UPDATE; the script is not kept)", n)
	}
}

// A kept statement whose rows are still being read is not run again under
// them: a second use meanwhile runs unprepared, and the first rows read on
// to their end.
func TestSQLiteConnKeptStatementInUseIsNotShared(t *testing.T) {
	db := openPreparingTest(t)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT x FROM t WHERE x > ? ORDER BY x`
	outer, err := tx.Query(q, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Close()
	var got []int
	for outer.Next() {
		var x int
		if err := outer.Scan(&x); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
		var inner int
		if err := tx.QueryRow(q, 2).Scan(&inner); err != nil || inner != 3 {
			t.Fatalf("the query run again under its own rows = %d, %v; want 3", inner, err)
		}
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("the outer rows read %v, want [1 2 3]", got)
	}
}
