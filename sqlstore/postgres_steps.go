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
// statement checks the lease on the run row, bumps the run's counter in
// step_seqs (creating it at 1 on the first step) and inserts the step with
// the new number. The check locks the run row FOR SHARE until the statement
// commits, so the lease cannot move between the check and the insert (a
// transition of the run waits for the append, at most one insert; an
// append waits for a transition under way and checks the row as it leaves
// it). The bump locks the counter row, so concurrent appends to a run get
// distinct, consecutive numbers, and a failed insert gives its number back.
func (s *PGStore) StepAppend(ctx context.Context, owner string, step *agent.Step) error {
	what := "appending a step to run " + step.RunID
	if owner == "" {
		return fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	if step.At.IsZero() {
		step.At = time.Now().UTC()
	}
	var seq int
	err := s.pool.QueryRow(ctx, `WITH held AS (
			SELECT id FROM runs WHERE id = $1 AND `+fmt.Sprintf(heldForSteps, "$10")+`
			FOR SHARE),
		next AS (
			INSERT INTO step_seqs AS c (run_id, last_seq)
				SELECT id, 1 FROM held
			ON CONFLICT (run_id) DO UPDATE SET last_seq = c.last_seq + 1
			RETURNING run_id, last_seq)
		INSERT INTO steps (`+stepColumns+`)
			SELECT run_id, last_seq, $2, $3, $4, $5, $6, $7, $8, $9 FROM next
		RETURNING seq`,
		step.RunID, nanos(step.At), string(step.Kind), step.Round, step.Tool, []byte(step.Args),
		string(step.Outcome), []byte(step.Text), int64(step.Duration), owner).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, step.RunID).Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("sqlstore: %s: %w", what, agent.ErrNotFound)
		case err != nil:
			return fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		return fmt.Errorf("sqlstore: %s: %w", what, agent.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
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
