package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cancels between processes on PostgreSQL: the process that cancels a run
// announces it with NOTIFY once the run row says cancelled, and every
// process that LISTENs reads that run's row at once and cancels its calls in
// flight if the row says cancelled. A notification is only a hint: anyone
// who may connect can NOTIFY, and a stray one (or one whose cancel lost its
// race) must not stop a run the row says is running. The run row stays the
// one definition of cancelled, and nothing depends on a notification
// arriving: one lost (a listener reconnecting, a NOTIFY that failed) is
// made good by the watchers' poll.

// cancelChannelSQL is the SQL expression of the channel that cancels go
// on: one per schema, so that deployments in different schemas of one
// database (and parallel tests) do not hear each other. The schema's name
// is hashed to keep the channel within PostgreSQL's 63-byte identifiers.
const cancelChannelSQL = `'andon_run_cancelled_' || md5(current_schema())`

// Listener timings. A listener that hears nothing for listenHealthInterval
// pings its connection, so that a connection that died silently (a machine
// or a network gone, no RST) is noticed; listenPingTimeout bounds the ping.
const (
	listenBackoffMin     = 100 * time.Millisecond
	listenBackoffMax     = 10 * time.Second
	listenHealthInterval = 30 * time.Second
	listenPingTimeout    = 10 * time.Second
)

// Notifier carries a run's cancel to every process on the database at
// once: PostgreSQL's LISTEN/NOTIFY. A store has one if its database can
// ([Store.Notifier]); without one (SQLite), the worker holding a cancelled
// run hears of it from River (the run's job is cancelled with it), and the
// watchers' poll is the backstop.
type Notifier interface {
	// NotifyCancelled tells every process listening on this database
	// and schema (ListenCancelled) that the runs runIDs were cancelled.
	NotifyCancelled(ctx context.Context, runIDs ...string) error
	// ListenCancelled listens for the cancels that NotifyCancelled
	// announces, calling fn with the run ids of each notification, until
	// ctx ends.
	ListenCancelled(ctx context.Context, fn func(runIDs ...string), opts ...ListenOption) error
}

// Notifier returns the store's [Notifier] and true if its database has one
// (PostgreSQL), or false (SQLite).
func (s *Store) Notifier() (Notifier, bool) {
	n, ok := s.d.(Notifier)
	return n, ok
}

var _ Notifier = (*postgres)(nil)

// NotifyCancelled tells every process listening on this database and schema
// (ListenCancelled) that the runs runIDs were cancelled, in one statement.
// Call it after the run rows say so: listeners take a notification as a
// hint, read the rows and cancel the runs' calls in flight if they say
// cancelled. A notification carries nothing but run ids.
func (d *postgres) NotifyCancelled(ctx context.Context, runIDs ...string) error {
	if len(runIDs) == 0 {
		return nil
	}
	if _, err := d.exec(ctx, `WITH ids AS (SELECT unnest(?::text[]) AS id) `+announced("ids"), runIDs); err != nil {
		return fmt.Errorf("sqlstore: announcing the cancel of %d runs: %w", len(runIDs), err)
	}
	return nil
}

func (d *postgres) canAnnounce() bool { return true }

// announcing makes a cancel and its announcement one statement: the
// UPDATE's RETURNING ids feed pg_notify, in the UPDATE's own transaction.
// PostgreSQL delivers a NOTIFY at its transaction's commit and drops it on
// a rollback, so a cancel is never announced unless the row says
// cancelled, and a cancel that lost its guard (it returned no id)
// announces nothing.
func (d *postgres) announcing(update string) string {
	return `WITH done AS (` + update + `)
		` + announced("done")
}

// A notification names the runs of one statement together, their ids
// separated by spaces (run ids hold none), not one notification each: a
// storm of a hundred cancels is then one notification, which a listener
// reads in one go and hands to its watcher at once, so that one read of
// the rows answers the whole wave; one each reached a worker over 2–7 ms,
// its watcher's reads began on the first few, and the rest waited behind
// those reads. A payload has at most about announceChunk bytes of ids
// (PostgreSQL refuses one of 8,000); a larger statement's ids go in several.
//
// A process of an earlier version takes such a payload for one run id that
// it does not watch, and ignores it: during a rolling upgrade it sees the
// cancels of newer processes at its watcher's next poll.
const announceChunk = 7000

// announced is the SELECT that announces the ids of the rows of the CTE
// done (a column id) and returns them, one row each.
func announced(done string) string {
	return `SELECT unnest(chunk.ids) AS id FROM (
			SELECT array_agg(id) AS ids FROM (
				SELECT id, sum(octet_length(id) + 1) OVER (ORDER BY id) / ` + strconv.Itoa(announceChunk) + ` AS n
				FROM ` + done + `) AS numbered
			GROUP BY n) AS chunk,
		LATERAL (SELECT pg_notify(` + cancelChannelSQL + `, array_to_string(chunk.ids, ' '))) AS told`
}

// ListenOption configures [Notifier.ListenCancelled].
type ListenOption func(*listenConfig)

type listenConfig struct {
	logger      *slog.Logger
	onListening func()
	health      time.Duration // listenHealthInterval; tests shorten it
}

// ListenLogger sets where the listener logs its lost connections (warn).
// The default is slog.Default().
func ListenLogger(l *slog.Logger) ListenOption {
	return func(c *listenConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// ListenOnListening sets a function called each time the listener is in
// place: once it first listens, and again after every reconnect.
// Notifications sent while no connection listened are lost, so a caller
// that must not miss a cancel re-reads what it watches when f is called
// (the watcher's poll does so anyway, every interval).
func ListenOnListening(f func()) ListenOption {
	return func(c *listenConfig) { c.onListening = f }
}

// ListenCancelled listens for the cancels that NotifyCancelled
// announces on this database and schema — from any process or machine, this
// one included — and calls fn with the run ids of each notification (those
// of one statement, often many), until ctx ends; then it
// returns nil. fn runs on the listener's goroutine, one call at a time, and
// should return quickly.
//
// It listens on a connection of its own, not one of the pool's. If that
// connection fails (the server restarts, a backend is terminated, a network
// dies silently: an idle connection is pinged every 30 s), it logs a warning
// and reconnects, with a backoff from 100 ms doubling to 10 s; it never gives
// up before ctx ends. Between a loss and the reconnect, notifications are
// lost (see [ListenOnListening]).
func (d *postgres) ListenCancelled(ctx context.Context, fn func(runIDs ...string), opts ...ListenOption) error {
	if fn == nil {
		return errors.New("sqlstore: ListenCancelled needs a function to call")
	}
	cfg := listenConfig{logger: slog.Default(), health: listenHealthInterval}
	for _, o := range opts {
		o(&cfg)
	}
	backoff := listenBackoffMin
	for {
		since, err := d.listenOnce(ctx, &cfg, fn)
		if ctx.Err() != nil {
			return nil
		}
		if !since.IsZero() && time.Since(since) >= listenBackoffMax {
			backoff = listenBackoffMin // it had been up a while: not a flapping server
		}
		// Up to a quarter less, so that many workers do not reconnect in step.
		delay := backoff - rand.N(backoff/4+1)
		cfg.logger.Warn("sqlstore: listening for run cancels failed; reconnecting (meanwhile the watcher's poll sees cancels)",
			"db", where(d.pool.Config()), "error", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce connects, listens and calls fn for every notification until
// the connection fails (the error) or ctx ends (nil). since is when it began
// listening; zero if it never did.
func (d *postgres) listenOnce(ctx context.Context, cfg *listenConfig, fn func(...string)) (since time.Time, err error) {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig)
	if err != nil {
		return time.Time{}, err
	}
	defer func() {
		// Close says goodbye to the server; a dead connection must not
		// hold it up.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var channel string
	if err := conn.QueryRow(ctx, `SELECT `+cancelChannelSQL).Scan(&channel); err != nil {
		return time.Time{}, fmt.Errorf("naming the channel: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		return time.Time{}, fmt.Errorf("LISTEN: %w", err)
	}
	since = time.Now()
	if cfg.onListening != nil {
		cfg.onListening()
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, cfg.health)
		n, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return since, nil
		case err == nil:
			if n != nil {
				if ids := strings.Fields(n.Payload); len(ids) > 0 {
					fn(ids...)
				}
			}
		case idle && !conn.IsClosed():
			// Nothing heard for a while: is anyone still there? A
			// notification that arrives during the ping is kept for the
			// next wait.
			pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return since, nil
				}
				return since, fmt.Errorf("the idle connection does not answer: %w", err)
			}
		default:
			return since, err
		}
	}
}
