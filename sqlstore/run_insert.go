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

// Run inserts are group-committed (group_commit.go): runs submitted while
// another insert is being written go in the next transaction together —
// their River jobs in one statement, their rows in another — instead of a
// transaction each. A submit burst (many API clients, a script queueing
// work) was two statements and a commit per run, and River's job insert
// alone was the costliest statement of a short run on PostgreSQL. A run
// inserted alone is written at once, as before.

// maxInsertBatch bounds the runs of one transaction.
const maxInsertBatch = 64

// insertWriteTimeout bounds one batch's transaction.
const insertWriteTimeout = 30 * time.Second

// insertReq is one RunInsert waiting for its batch.
type insertReq struct {
	waiter
	run *agent.Run
	err error // set by the batch
}

// RunInsert implements [agent.Store]. run.ID must be set. A queued run's
// River job is inserted in the same transaction. A zero Status is
// stored (and set in run) as queued, a zero CreatedAt as now. Every other
// field is stored as given, so a run can be born running with a lease.
// Inserting an ID that exists fails. A ctx that ends while the insert
// waits for concurrent ones to be written leaves nothing written; once its
// transaction is being written, the answer says whether it committed.
func (s *Store) RunInsert(ctx context.Context, run *agent.Run) error {
	if run.ID == "" {
		return errors.New("sqlstore: inserting a run: empty id")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: inserting run %s: %w", run.ID, err)
	}
	if run.Status == "" {
		run.Status = agent.StatusQueued
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = time.Now().UTC()
	}
	req := &insertReq{waiter: newWaiter(), run: run}
	err := s.inserts.do(ctx, oneGroup{}, req)
	if err == nil {
		err = req.err
	}
	if err != nil {
		return fmt.Errorf("sqlstore: inserting run %s: %w", run.ID, err)
	}
	return nil
}

// writeRunInserts writes batch in one transaction. If it fails, each run
// is tried alone, so that one insert's failure (an id that exists) is its
// own.
func (s *Store) writeRunInserts(ctx context.Context, batch []*insertReq) {
	if len(batch) > 1 {
		err := s.d.inTx(ctx, func(t tx) error { return insertRuns(ctx, t, batch) })
		if err == nil {
			return
		}
	}
	for _, r := range batch {
		r.err = s.d.inTx(ctx, func(t tx) error { return insertRuns(ctx, t, []*insertReq{r}) })
	}
}

// insertRuns inserts the queued runs' jobs, then every run's row with
// its job's id: one statement each, whatever the number of runs.
func insertRuns(ctx context.Context, t tx, batch []*insertReq) error {
	var queued []string
	for _, r := range batch {
		if r.run.Status == agent.StatusQueued && r.run.Home == "" {
			queued = append(queued, r.run.ID)
		}
	}
	var jobIDs []int64
	if len(queued) > 0 {
		var err error
		if jobIDs, err = t.enqueue(ctx, queued...); err != nil {
			return err
		}
	}
	var stmt strings.Builder
	stmt.WriteString(`INSERT INTO runs (` + runColumns + `, job_id) VALUES `)
	args := make([]any, 0, 18*len(batch))
	for i, r := range batch {
		if i > 0 {
			stmt.WriteString(", ")
		}
		stmt.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		var jobID sql.NullInt64
		if r.run.Status == agent.StatusQueued && r.run.Home == "" {
			jobID = sql.NullInt64{Int64: jobIDs[0], Valid: true}
			jobIDs = jobIDs[1:]
		}
		run := r.run
		args = append(args, run.ID, run.Owner, nullBytes(run.Request), string(run.Status), string(run.Reason), run.Error,
			run.LeaseOwner, nanos(run.LeaseExpires), string(run.PendingEffect), nullBytes(run.Suspended),
			run.Attempts, nanos(run.CreatedAt), nanos(run.StartedAt), nanos(run.FinishedAt), run.Home, run.Trace, run.CancelTrace, jobID)
	}
	_, err := t.exec(ctx, stmt.String(), args...)
	return err
}
