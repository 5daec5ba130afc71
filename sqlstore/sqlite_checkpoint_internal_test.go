package sqlstore

import (
	"bytes"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
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
// log, without anyone closing the store: once the log holds a
// checkpoint's worth of frames, the checkpointer copies it back.
func TestSQLiteCheckpointerCopiesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "andon.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.d.exec(t.Context(), `CREATE TABLE copied (x TEXT, pad BLOB)`); err != nil {
		t.Fatal(err)
	}
	// Five rows of 1 MiB: over 1,250 pages of 4 KiB, past checkpointPages.
	for range 5 {
		if _, err := s.d.exec(t.Context(), `INSERT INTO copied (x, pad) VALUES (?, zeroblob(1048576))`, "in the file"); err != nil {
			t.Fatal(err)
		}
	}
	// immutable=1 reads the database file as it is, log or no log: the rows
	// are there only once a checkpoint has copied them.
	deadline := time.Now().Add(40 * checkpointInterval)
	for {
		got, err := readFileOnly(path)
		if err == nil && got == "in the file" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the database file has %q (%v), want the rows the store wrote: nothing checkpointed the log", 40*checkpointInterval, got, err)
		}
		time.Sleep(checkpointInterval / 5)
	}
}

// The checkpointer reads the frames waiting in the log from the log's
// index: some after a write, none once a checkpoint copied them back.
func TestUncopiedFramesReadsTheLogIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "andon.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := uncopiedFrames(path + "-shm")
	if _, err := s.d.exec(t.Context(), `CREATE TABLE counted (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	after := uncopiedFrames(path + "-shm")
	if after <= before {
		t.Fatalf("%d frames wait after a write, %d before: want more", after, before)
	}
	db := openCheckpointDB(t, path)
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	if n := uncopiedFrames(path + "-shm"); n != 0 {
		t.Fatalf("%d frames wait after a checkpoint, want none", n)
	}
	if n := uncopiedFrames(filepath.Join(t.TempDir(), "none-shm")); n != 0 {
		t.Fatalf("%d frames wait in a log that does not exist, want none", n)
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

// A store at rest costs no checkpoint: the checkpointer looks at the log's
// index and leaves the log be until frames wait in it.
func TestCheckpointerAtRestDoesNothing(t *testing.T) {
	s := sqliteStore(t)
	d := s.d.(*sqlite)
	const interval = 5 * time.Millisecond
	c := startCheckpointer(openCheckpointDB(t, strings.TrimSuffix(d.checkpointer.shm, "-shm")), d.checkpointer.shm, 1, interval, slog.New(slog.DiscardHandler))
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
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := t.TempDir() // a directory is no database: every checkpoint fails
	db, err := sql.Open("sqlite", "file:"+dir+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	const interval = 2 * time.Millisecond
	// Due at every interval (pages 0), as after a checkpoint that failed.
	c := startCheckpointer(db, filepath.Join(dir, "andon.db-shm"), 0, interval, logger)
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

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
