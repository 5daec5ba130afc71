package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/jackc/pgx/v5"
)

var _ agent.Store = (*PGStore)(nil)

// RunInsert implements [agent.Store] as [Store.RunInsert] does.
func (s *PGStore) RunInsert(ctx context.Context, run *agent.Run) error {
	if run.ID == "" {
		return errors.New("sqlstore: inserting a run: empty id")
	}
	if run.Status == "" {
		run.Status = agent.StatusQueued
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = time.Now().UTC()
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO runs (`+runColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			run.ID, run.Owner, []byte(run.Request), string(run.Status), string(run.Reason), run.Error,
			run.LeaseOwner, nanos(run.LeaseExpires), string(run.PendingEffect), []byte(run.Suspended),
			run.Attempts, nanos(run.CreatedAt), nanos(run.StartedAt), nanos(run.FinishedAt)); err != nil {
			return err
		}
		if run.Status != agent.StatusQueued {
			return nil
		}
		return s.enqueueTx(ctx, tx, run.ID)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: inserting run %s: %w", run.ID, err)
	}
	return nil
}

// enqueueTx inserts run id's job in tx and records it on the run.
func (s *PGStore) enqueueTx(ctx context.Context, tx pgx.Tx, id string) error {
	jobID, err := s.jobs.enqueue(ctx, tx, id)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE runs SET job_id = $1 WHERE id = $2`, jobID, id)
	return err
}

// RunGet implements [agent.Store].
func (s *PGStore) RunGet(ctx context.Context, id string) (*agent.Run, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: reading run %s: %w", id, agent.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading run %s: %w", id, err)
	}
	return run, nil
}

// RunList implements [agent.Store] as [Store.RunList] does: newest first
// (by creation time, then id, both descending), [agent.DefaultRunListLimit]
// for a Limit of zero or less, and [agent.ErrNotFound] for a Before naming
// a run that does not exist.
func (s *PGStore) RunList(ctx context.Context, filter agent.RunFilter) ([]*agent.Run, error) {
	var (
		where []string
		args  pgArgs
	)
	if filter.Owner != "" {
		where = append(where, "owner = "+args.add(filter.Owner))
	}
	if filter.Status != "" {
		where = append(where, "status = "+args.add(string(filter.Status)))
	}
	if filter.Before != "" {
		var created int64
		err := s.pool.QueryRow(ctx, `SELECT created_at FROM runs WHERE id = $1`, filter.Before).Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("sqlstore: listing runs before %s: %w", filter.Before, agent.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: listing runs before %s: %w", filter.Before, err)
		}
		where = append(where, "(created_at, id) < ("+args.add(created)+", "+args.add(filter.Before)+")")
	}
	limit := filter.Limit
	if limit <= 0 {
		limit = agent.DefaultRunListLimit
	}
	stmt := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		stmt += ` WHERE ` + strings.Join(where, " AND ")
	}
	stmt += ` ORDER BY created_at DESC, id DESC LIMIT ` + args.add(limit)
	return s.queryRuns(ctx, "listing runs", stmt, args...)
}

// RunStatuses implements [agent.Store] with one query whatever the number
// of ids: they travel as a single text[] parameter (= ANY($1)), so there is
// no bound-parameter limit to chunk around and the cancel watcher costs one
// statement per poll.
func (s *PGStore) RunStatuses(ctx context.Context, ids []string) (map[string]agent.Status, error) {
	if len(ids) == 0 {
		return map[string]agent.Status{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, status FROM runs WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading run statuses: %w", err)
	}
	defer rows.Close()
	return statusMap(rows)
}

// queryRuns runs a query returning runColumns rows.
func (s *PGStore) queryRuns(ctx context.Context, what, stmt string, args ...any) ([]*agent.Run, error) {
	rows, err := s.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rows.Close()
	return collect(rows, what, scanRun)
}

// pgArgs collects the arguments of a statement built piece by piece; add
// returns the placeholder ($1, $2, …) of the argument it appends.
type pgArgs []any

func (a *pgArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// CancelRunJob is [Store.CancelRunJob] on PostgreSQL, where River tells the
// worker holding the job by NOTIFY.
func (s *PGStore) CancelRunJob(ctx context.Context, id string) error {
	var jobID *int64
	err := s.pool.QueryRow(ctx, `SELECT job_id FROM runs WHERE id = $1 AND status = 'cancelled'`, id).Scan(&jobID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && jobID == nil {
		return nil
	}
	if err == nil {
		err = s.jobs.cancel(ctx, *jobID)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: cancelling the job of run %s: %w", id, err)
	}
	return nil
}
