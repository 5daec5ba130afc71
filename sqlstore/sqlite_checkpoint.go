package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// Checkpoints off the writer's path. In WAL mode SQLite copies the log back
// into the database file — a checkpoint, with an fsync of both files — by
// default inside the commit that takes the log past 1,000 pages. Every write
// of this process, andon's and River's, shares one connection, so that
// commit's fsync held up all of them: measured, SQLite, 1,000 runs in
// flight, waves of 100 cancels, one wave in ten met a 7.9 ms fsync of a
// checkpoint on the writer and every cancel of it waited (took p50 3 →
// 9–15 ms). So the writer never checkpoints (wal_autocheckpoint(0)), and a
// checkpointer on a connection of its own does, in PASSIVE mode, which never
// waits for readers or writers and never makes them wait: the writer goes on
// appending to the log while the checkpoint copies and syncs.
//
// It looks at the log file every checkpointInterval and checkpoints if the
// log was written since its last checkpoint, or that checkpoint could not
// copy every frame (a reader still needed them) or failed: a store at rest
// sends nothing. The interval bounds how often the log is restarted from
// its start — a write that does so syncs the log's header, on the writer's
// path — and how much it grows between checkpoints: half a second's
// writes. (With a second, a storm's checkpoints synced 15–55 ms at a time
// and the writer's reads of the log met them; with half a second, smaller
// ones. Neither moved a storm's tail beyond the noise of ten waves.)
// SQLite still checkpoints when the last connection to the file closes.
//
// It looks with stat(2) only, and never opens the log or its index: closing
// any descriptor of a file drops every POSIX lock this process holds on it,
// SQLite's among them, and other processes on the file would then read and
// write past them. (Measured the hard way: reading the index's header
// through a descriptor of its own lost a run between processes.)

// checkpointInterval is how often the checkpointer looks at the log.
const checkpointInterval = 500 * time.Millisecond

// checkpointer checkpoints one SQLite database's log in the background
// until stopped.
type checkpointer struct {
	db       *sql.DB // its own connection: never the writer's
	wal      string  // the log's path
	interval time.Duration
	logger   *slog.Logger
	// made counts the checkpoints made (tests).
	made atomic.Int64

	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer starts checkpointing, through db, the database whose
// log is wal. The checkpointer owns db and closes it when stopped.
func startCheckpointer(db *sql.DB, wal string, interval time.Duration, logger *slog.Logger) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wal: wal, interval: interval, logger: logger, stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// close stops the checkpointer, waits for a checkpoint under way, and
// closes its connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var (
		seen    logState // the log as it was before the last checkpoint
		again   bool     // the last checkpoint left frames behind, or failed
		failing bool     // the last checkpoint failed: logged once
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := statLog(c.wal)
		if now == seen && !again {
			continue
		}
		complete, err := c.checkpoint(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				c.logger.Warn("sqlstore: checkpointing the SQLite log failed; retrying every interval", "error", err)
			}
			failing, again = true, true
			continue
		case failing:
			c.logger.Info("sqlstore: checkpointing the SQLite log works again")
		}
		// The checkpoint copied every write before now. A write after it
		// within the file system's timestamp granularity (a few
		// milliseconds) may look like none: its frames then wait in the
		// log, where every reader sees them, for the next write.
		failing, again, seen = false, !complete, now
	}
}

// checkpoint makes one PASSIVE checkpoint and reports whether it copied
// every frame of the log. Another process's checkpoint under way (busy)
// is not an error: the next interval tries again.
func (c *checkpointer) checkpoint(ctx context.Context) (complete bool, err error) {
	var busy, logged, copied int64
	if err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logged, &copied); err != nil {
		return false, err
	}
	c.made.Add(1)
	return busy == 0 && copied >= logged, nil
}

// logState is what the checkpointer compares of the log file: a write
// changes its modification time (and, while it grows, its size).
type logState struct {
	size    int64
	modTime time.Time
}

// statLog returns the state of the log at path: the zero state if there is
// no log. A log that cannot be looked at reads as changed, so that the
// checkpoint is tried (and says what is wrong, if anything is).
func statLog(path string) logState {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return logState{}
	case err != nil:
		return logState{modTime: time.Now()}
	}
	return logState{size: fi.Size(), modTime: fi.ModTime()}
}
