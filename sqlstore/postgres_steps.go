package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/jackc/pgx/v5"
)

// StepAppend implements [agent.Store] as [Store.StepAppend] does. One
// statement bumps the run's counter in step_seqs (creating it at 1 on the
// first step) and inserts the step with the new number. The bump locks the
// counter row until the statement commits, so concurrent appends to a run
// get distinct, consecutive numbers, and a failed insert gives its number
// back. The run row itself is not locked: a cancel never waits for a step.
// Appending to a run that does not exist fails with [agent.ErrNotFound].
func (s *PGStore) StepAppend(ctx context.Context, step *agent.Step) error {
	if step.At.IsZero() {
		step.At = time.Now().UTC()
	}
	var seq int
	err := s.pool.QueryRow(ctx, `WITH next AS (
			INSERT INTO step_seqs AS c (run_id, last_seq)
				SELECT id, 1 FROM runs WHERE id = $1
			ON CONFLICT (run_id) DO UPDATE SET last_seq = c.last_seq + 1
			RETURNING run_id, last_seq)
		INSERT INTO steps (`+stepColumns+`)
			SELECT run_id, last_seq, $2, $3, $4, $5, $6, $7, $8, $9 FROM next
		RETURNING seq`,
		step.RunID, nanos(step.At), string(step.Kind), step.Round, step.Tool, []byte(step.Args),
		string(step.Outcome), []byte(step.Text), int64(step.Duration)).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("sqlstore: appending a step to run %s: %w", step.RunID, agent.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: appending a step to run %s: %w", step.RunID, err)
	}
	step.Seq = seq
	return nil
}

// StepList implements [agent.Store]: the run's steps by seq. A run with no
// steps, or that does not exist, has none.
func (s *PGStore) StepList(ctx context.Context, runID string) ([]*agent.Step, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the steps of run %s: %w", runID, err)
	}
	defer rows.Close()
	return collect(rows, "listing the steps of run "+runID, scanStep)
}
