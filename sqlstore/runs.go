package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
)

var _ agent.Store = (*Store)(nil)

// runColumns is the column list every read of a whole run selects or
// returns, in the order scanRun expects.
const runColumns = `id, owner, request, status, reason, error, lease_owner, lease_expires,
	pending_effect, suspended, attempts, created_at, started_at, finished_at, home, trace, cancel_trace`

// enqueueTx inserts run id's job in tx and records it on the run.
func enqueueTx(ctx context.Context, tx tx, id string) error {
	jobIDs, err := tx.enqueue(ctx, id)
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `UPDATE runs SET job_id = ? WHERE id = ?`, jobIDs[0], id)
	return err
}

// RunGet implements [agent.Store].
func (s *Store) RunGet(ctx context.Context, id string) (*agent.Run, error) {
	run, err := scanRun(s.d.queryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: reading run %s: %w", id, agent.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading run %s: %w", id, err)
	}
	return run, nil
}

// RunList implements [agent.Store]: newest first (by creation time, then
// id, both descending). A Limit of zero or less means
// [agent.DefaultRunListLimit]. A Before naming a run that does not exist
// fails with [agent.ErrNotFound] rather than reading as the end of the list.
func (s *Store) RunList(ctx context.Context, filter agent.RunFilter) ([]*agent.Run, error) {
	var where []string
	var args []any
	if filter.Owner != "" {
		where = append(where, "owner = ?")
		args = append(args, filter.Owner)
	}
	if filter.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(filter.Status))
		if !filter.Status.Terminal() {
			// Unfinished runs are few: start from them (active_runs).
			where = append(where, "id IN (SELECT id FROM active_runs WHERE status = ?)")
			args = append(args, string(filter.Status))
		}
	}
	if filter.Before != "" {
		var created int64
		err := s.d.queryRow(ctx, `SELECT created_at FROM runs WHERE id = ?`, filter.Before).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlstore: listing runs before %s: %w", filter.Before, agent.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: listing runs before %s: %w", filter.Before, err)
		}
		where = append(where, "(created_at, id) < (?, ?)")
		args = append(args, created, filter.Before)
	}
	limit := filter.Limit
	if limit <= 0 {
		limit = agent.DefaultRunListLimit
	}
	stmt := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		stmt += ` WHERE ` + strings.Join(where, " AND ")
	}
	stmt += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	return s.queryRuns(ctx, "listing runs", stmt, args...)
}

// RunStatuses implements [agent.Store] with one query whatever the number
// of ids: they travel as a single parameter (a JSON array unpacked by
// json_each on SQLite, a text[] on PostgreSQL), so there is no
// bound-parameter limit to chunk around and the cancel watcher costs one
// statement per poll.
func (s *Store) RunStatuses(ctx context.Context, ids []string) (map[string]agent.Status, error) {
	if len(ids) == 0 {
		return map[string]agent.Status{}, nil
	}
	in, list := s.d.idIn(ids)
	// The watcher's read, hinted (a cancel's path) or before a tool call:
	// one round trip, on whichever connection the pool hands out.
	rs, err := s.d.oneTrip().query(ctx, `SELECT id, status FROM runs WHERE id `+in, list)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading run statuses: %w", err)
	}
	defer rs.Close()
	return statusMap(rs)
}

// queryRuns runs a query returning runColumns rows.
func (s *Store) queryRuns(ctx context.Context, what, stmt string, args ...any) ([]*agent.Run, error) {
	rs, err := s.d.query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rs.Close()
	return collect(rs, what, scanRun)
}

// scanRun reads one row of runColumns.
func scanRun(sc scanner) (*agent.Run, error) {
	var (
		r                                     agent.Run
		request, suspended                    []byte
		status, reason, effect                string
		leaseExpires, created, started, ended int64
	)
	if err := sc.Scan(&r.ID, &r.Owner, &request, &status, &reason, &r.Error, &r.LeaseOwner, &leaseExpires,
		&effect, &suspended, &r.Attempts, &created, &started, &ended, &r.Home, &r.Trace, &r.CancelTrace); err != nil {
		return nil, err
	}
	r.Request = request
	r.Status = agent.Status(status)
	r.Reason = agent.Reason(reason)
	r.LeaseExpires = fromNanos(leaseExpires)
	r.PendingEffect = agent.Effect(effect)
	r.Suspended = suspended
	r.CreatedAt = fromNanos(created)
	r.StartedAt = fromNanos(started)
	r.FinishedAt = fromNanos(ended)
	return &r, nil
}

// nanos stores a time as Unix nanoseconds, the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of nanos, in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nullBytes stores nil as NULL and anything else, even empty, as a blob.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// CancelRunJob cancels the River job of run id, which must be cancelled
// already: a job not yet worked is never handed out, and the worker
// holding a running one hears of it (PostgreSQL's NOTIFY, riversqlite's
// notification table) and has its watcher read the run's row. It is a hint, made after the
// cancel, not part of it: the row is what says cancelled. A run without a
// job, or a job already finished, is not an error.
func (s *Store) CancelRunJob(ctx context.Context, id string) error {
	var jobID sql.NullInt64
	err := s.d.queryRow(ctx, `SELECT job_id FROM runs WHERE id = ? AND status = 'cancelled'`, id).Scan(&jobID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !jobID.Valid {
		return nil
	}
	if err == nil {
		err = s.d.cancelJob(ctx, jobID.Int64)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: cancelling the job of run %s: %w", id, err)
	}
	return nil
}

// jobFinal lists the states of a River job that has finished.
const jobFinal = `('cancelled', 'completed', 'discarded')`

// CancelRunJobs is CancelRunJob for many runs at once — what an operator's
// storm of cancels needs: one read finds the jobs of the runs of ids that
// are cancelled, and one transaction cancels them all (one commit; on
// PostgreSQL River's notifications go out at it). A job that has finished
// already is left out: after a NOTIFY (node's announcer waits for the
// storm to pass first), the workers have mostly ended the runs, and their
// jobs, by then, and a storm's transaction of a statement per job would
// only contend with theirs for the same job rows (measured, PostgreSQL,
// serve and two workers: River's JobCancel and the workers' job
// completions waiting on each other's row locks during the next wave).
func (s *Store) CancelRunJobs(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in, list := s.d.idIn(ids)
	rs, err := s.d.query(ctx, `SELECT r.job_id FROM runs r JOIN river_job j ON j.id = r.job_id
		WHERE r.id `+in+` AND r.status = 'cancelled' AND j.state NOT IN `+jobFinal, list)
	if err != nil {
		return fmt.Errorf("sqlstore: reading the jobs of %d cancelled runs: %w", len(ids), err)
	}
	jobIDs, err := collect(rs, "reading the jobs of cancelled runs", func(sc scanner) (int64, error) {
		var id int64
		return id, sc.Scan(&id)
	})
	if cerr := rs.Close(); err == nil {
		err = cerr
	}
	if err != nil || len(jobIDs) == 0 {
		return err
	}
	err = s.d.inTx(ctx, func(tx tx) error {
		for _, id := range jobIDs {
			if err := tx.cancelJob(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlstore: cancelling the jobs of %d runs: %w", len(jobIDs), err)
	}
	return nil
}
