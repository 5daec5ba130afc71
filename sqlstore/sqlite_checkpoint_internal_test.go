package sqlstore

import (
	"bytes"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The writer connection leaves checkpoints to the checkpointer: a commit
// on it never copies the log back, with its fsyncs, while every other
// write of the process waits.
func TestSQLiteWriterNeverCheckpoints(t *testing.T) {
	s := sqliteStore(t)
	var every int
	if err := s.d.(*sqlite).db.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&every); err != nil {
		t.Fatal(err)
	}
	if every != 0 {
		t.Fatalf("the writer checkpoints every %d pages of log, want never (0)", every)
	}
}

// What the store writes reaches the database file itself, not only the
// log, without anyone closing the store: the checkpointer copies it back.
func TestSQLiteCheckpointerCopiesTheLog(t *testing.T) {
	s := sqliteStore(t)
	path := dbPath(s)
	if _, err := s.d.exec(t.Context(), `CREATE TABLE copied (x TEXT, pad BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.exec(t.Context(), `INSERT INTO copied (x, pad) VALUES (?, zeroblob(100))`, "in the file"); err != nil {
		t.Fatal(err)
	}
	// immutable=1 reads the database file as it is, log or no log: the row
	// is there only once a checkpoint has copied it.
	deadline := time.Now().Add(40 * checkpointInterval)
	for {
		got, err := readFileOnly(path)
		if err == nil && got == "in the file" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the database file has %q (%v), want the row the store wrote: nothing checkpointed the log", 40*checkpointInterval, got, err)
		}
		time.Sleep(checkpointInterval / 5)
	}
}

// readFileOnly reads the row of table copied from the database file at
// path alone, ignoring its log.
func readFileOnly(path string) (string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var x string
	err = db.QueryRow(`SELECT x FROM copied`).Scan(&x)
	return x, err
}

// A store at rest costs no checkpoint: the checkpointer looks at the log
// and leaves it be until something is written.
func TestCheckpointerAtRestDoesNothing(t *testing.T) {
	s := sqliteStore(t)
	d := s.d.(*sqlite)
	const interval = 5 * time.Millisecond
	c := startCheckpointer(openCheckpointDB(t, dbPath(s)), d.checkpointer.wal, interval, slog.New(slog.DiscardHandler))
	defer c.close()
	if _, err := s.d.exec(t.Context(), `CREATE TABLE rest (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint of the write", func() bool { return c.made.Load() > 0 })
	time.Sleep(4 * interval) // any checkpoint under way when the first was counted ends
	made := c.made.Load()
	time.Sleep(40 * interval)
	if n := c.made.Load(); n != made {
		t.Fatalf("%d checkpoints over %v with nothing written, want none", n-made, 40*interval)
	}
	if _, err := s.d.exec(t.Context(), `INSERT INTO rest (x) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint of the next write", func() bool { return c.made.Load() > made })
}

// A checkpoint that fails is logged once, not once per interval, and the
// checkpointer keeps trying.
func TestCheckpointerLogsAFailureOnce(t *testing.T) {
	var logs bytes.Buffer // written by the checkpointer alone, read once it has stopped
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := t.TempDir() // a directory is no database: every checkpoint fails
	db, err := sql.Open("sqlite", "file:"+dir+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, "andon.db-wal") // a log that was written to
	if err := os.WriteFile(wal, []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	const interval = 2 * time.Millisecond
	c := startCheckpointer(db, wal, interval, logger)
	time.Sleep(50 * interval)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "checkpointing the SQLite log failed"); n != 1 {
		t.Fatalf("the failure was logged %d times over %v, want once:\n%s", n, 50*interval, logs.String())
	}
}

// openCheckpointDB opens a connection to the database at path as
// openSQLite opens the checkpointer's.
func openCheckpointDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// dbPath is the file of s, a SQLite store.
func dbPath(s *Store) string { return strings.TrimSuffix(s.d.(*sqlite).checkpointer.wal, "-wal") }

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
