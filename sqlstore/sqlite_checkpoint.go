package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"io"
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
// It reads how much of the log is not yet copied back every
// checkpointInterval, from the log's index (the -shm file, whose header is
// SQLite's documented file format), and checkpoints once that reaches
// checkpointPages — the threshold at which SQLite's own autocheckpoint
// would have run in a commit — or after a checkpoint that could not copy
// every frame (a reader still needed them), or failed. So checkpoints come
// as often as they did, and the log is restarted from its start (a write
// that does so syncs its header, on the writer's path) no more often. A
// store at rest sends nothing; SQLite still checkpoints when the last
// connection to the file closes.

// checkpointInterval is how often the checkpointer reads the log's index.
const checkpointInterval = 250 * time.Millisecond

// checkpointPages is how many frames of the log, not yet copied back, make
// a checkpoint due: SQLite's default autocheckpoint.
const checkpointPages = 1000

// checkpointer checkpoints one SQLite database's log in the background
// until stopped.
type checkpointer struct {
	db       *sql.DB // its own connection: never the writer's
	shm      string  // the log's index
	pages    uint32  // frames not yet copied back that make a checkpoint due
	interval time.Duration
	logger   *slog.Logger
	// made counts the checkpoints made (tests).
	made atomic.Int64

	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer starts checkpointing, through db, the database whose
// log's index is shm, whenever pages frames wait to be copied back. The
// checkpointer owns db and closes it when stopped.
func startCheckpointer(db *sql.DB, shm string, pages uint32, interval time.Duration, logger *slog.Logger) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, shm: shm, pages: pages, interval: interval, logger: logger, stop: stop, done: make(chan struct{})}
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
		again   bool // the last checkpoint left frames behind, or failed
		failing bool // the last checkpoint failed: logged once
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !again && uncopiedFrames(c.shm) < c.pages {
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
		failing, again = false, !complete
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

// uncopiedFrames reads from the log's index at shm how many frames of the
// log are not yet copied back into the database (zero if it cannot tell).
// The index begins with two copies of its header, then the checkpoint
// information (https://www.sqlite.org/walformat.html, in the machine's
// byte order): mxFrame, the frames in the log, at offset 16 of a header;
// nBackfill, the frames copied back, at offset 96. A header being written
// meanwhile differs from its copy: that read says zero, and the next one
// tells.
func uncopiedFrames(shm string) uint32 {
	f, err := os.Open(shm)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [100]byte
	if _, err := io.ReadFull(f, b[:]); err != nil || !bytes.Equal(b[0:48], b[48:96]) {
		return 0
	}
	frames, copied := binary.NativeEndian.Uint32(b[16:20]), binary.NativeEndian.Uint32(b[96:100])
	if copied >= frames {
		return 0
	}
	return frames - copied
}
