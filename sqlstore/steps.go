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

// StepAppend implements [agent.Store]. One statement picks seq (the run's
// last plus one) and inserts the step, so concurrent appends to a run get
// distinct, consecutive numbers. It sets step.Seq, and step.At to now if it
// is zero. Steps may be appended to a finished run (the step that was in
// flight when it was cancelled); appending to a run that does not exist
// fails with [agent.ErrNotFound]. Text is stored whole.
func (s *Store) StepAppend(ctx context.Context, step *agent.Step) error {
	if step.At.IsZero() {
		step.At = time.Now().UTC()
	}
	var seq int
	err := s.db.QueryRowContext(ctx, `INSERT INTO steps (`+stepColumns+`)
		SELECT id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM steps WHERE run_id = runs.id), ?, ?, ?, ?, ?, ?, ?, ?
		FROM runs WHERE id = ?
		RETURNING seq`,
		nanos(step.At), string(step.Kind), step.Round, step.Tool, nullBytes(step.Args), string(step.Outcome),
		step.Text, int64(step.Duration), step.RunID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
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
func (s *Store) StepList(ctx context.Context, runID string) ([]*agent.Step, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the steps of run %s: %w", runID, err)
	}
	defer rows.Close()
	return collect(rows, "listing the steps of run "+runID, scanStep)
}
