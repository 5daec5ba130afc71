package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
)

const stepColumns = `run_id, seq, at, kind, round, tool, args, outcome, text, duration_ns`

// heldForSteps is the guard of a step append, on the runs row: owner holds
// the run, which is running, waiting for input (its segment holds the call
// that asked, and what the server logs meanwhile is a step of it), or was
// cancelled while owner held it (a cancel keeps the lease owner).
const heldForSteps = `lease_owner = %s AND status IN ('running', 'waiting_for_input', 'cancelled')`

// StepAppend implements [agent.Store]. One statement checks the lease,
// picks seq (the run's last plus one) and inserts the step, so a segment
// that lost the run appends nothing, and concurrent appends to a run get
// distinct, consecutive numbers; the dialect's stepInsert says how each
// backend keeps the lease from moving meanwhile. It sets step.Seq, and
// step.At to now if it is zero. Text is stored whole. On SQLite,
// concurrent appends share a transaction, each with its own guard and
// result (step_batch.go).
func (s *Store) StepAppend(ctx context.Context, owner string, step *agent.Step) error {
	what := "appending a step to run " + step.RunID
	if owner == "" {
		return fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	if step.At.IsZero() {
		step.At = time.Now().UTC()
	}
	args := []any{nanos(step.At), string(step.Kind), step.Round, step.Tool, nullBytes(step.Args), string(step.Outcome),
		s.d.textArg(step.Text), int64(step.Duration), step.RunID, owner}
	var seq int
	var err error
	if s.steps != nil {
		// SQLite: concurrent appends share a transaction (step_batch.go).
		seq, err = s.appendBatched(ctx, args)
	} else {
		err = s.d.queryRow(ctx, s.d.stepInsert(), args...).Scan(&seq)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return s.whyNoStep(ctx, what, step.RunID)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	step.Seq = seq
	return nil
}

// whyNoStep tells why a guarded append inserted nothing: the run does not
// exist, or the caller does not hold it.
func (s *Store) whyNoStep(ctx context.Context, what, runID string) error {
	var one int
	err := s.d.queryRow(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlstore: %s: %w", what, agent.ErrNotFound)
	case err != nil:
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return fmt.Errorf("sqlstore: %s: %w", what, agent.ErrLeaseLost)
}

// StepList implements [agent.Store]: the run's steps by seq. A run with no
// steps, or that does not exist, has none.
func (s *Store) StepList(ctx context.Context, runID string) ([]*agent.Step, error) {
	rs, err := s.d.query(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the steps of run %s: %w", runID, err)
	}
	defer rs.Close()
	return collect(rs, "listing the steps of run "+runID, scanStep)
}
