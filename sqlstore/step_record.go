package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
)

var _ agent.StepRecorder = (*Store)(nil)

// stepThen is what a StepRecord does after its append: a guarded UPDATE
// of the run row, `UPDATE runs SET set WHERE id = ? AND guard AND
// lease_owner = ?`, with args for set's placeholders.
type stepThen struct {
	set, guard string
	args       []any
}

// StepRecord implements [agent.StepRecorder]. On PostgreSQL it is one
// statement: the append of [Store.StepAppend], which also returns the
// status its guard locked, and the UPDATE of then, which runs only if the
// step went in and only on a run still running (or not terminal, for a
// finish) and held by owner. On SQLite, the same statements in one
// transaction, under the write lock, so that nothing comes between them
// either.
func (s *Store) StepRecord(ctx context.Context, owner string, step *agent.Step, then agent.StepThen) (agent.StepRecorded, error) {
	what := "recording a step of run " + step.RunID
	if owner == "" {
		return agent.StepRecorded{}, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	follow, err := stepFollowUp(then)
	if err != nil {
		return agent.StepRecorded{}, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if step.At.IsZero() {
		step.At = time.Now().UTC()
	}
	args := []any{nanos(step.At), string(step.Kind), step.Round, step.Tool, nullBytes(step.Args), string(step.Outcome),
		s.d.textArg(step.Text), int64(step.Duration), step.RunID, owner}
	var (
		seq    int
		status string
		done   bool
	)
	if stmt := s.d.stepRecord(follow); stmt != "" {
		all := args
		if follow != nil {
			all = append(all, follow.args...)
		}
		err = s.d.queryRow(ctx, stmt, all...).Scan(&seq, &status, &done)
	} else {
		err = s.d.inTx(ctx, func(t tx) error {
			if err := t.queryRow(ctx, s.d.stepInsert(), args...).Scan(&seq); err != nil {
				return err
			}
			if err := t.queryRow(ctx, `SELECT status FROM runs WHERE id = ?`, step.RunID).Scan(&status); err != nil {
				return err
			}
			if follow != nil && status != string(agent.StatusCancelled) {
				n, err := t.exec(ctx, `UPDATE runs SET `+follow.set+` WHERE id = ? AND `+follow.guard+` AND lease_owner = ?`,
					append(follow.args, step.RunID, owner)...)
				if err != nil {
					return err
				}
				done = n == 1
			}
			return nil
		})
	}
	if errors.Is(err, sql.ErrNoRows) {
		return agent.StepRecorded{}, s.whyNoStep(ctx, what, step.RunID)
	}
	if err != nil {
		return agent.StepRecorded{}, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	step.Seq = seq
	return agent.StepRecorded{Cancelled: status == string(agent.StatusCancelled), Done: done}, nil
}

// stepFollowUp is the UPDATE that then asks for, or nil for none.
func stepFollowUp(then agent.StepThen) (*stepThen, error) {
	switch {
	case then.ClearFence && then.Finish != "":
		return nil, errors.New("a step record either clears the fence or finishes the run")
	case then.ClearFence:
		if then.LeaseUntil.IsZero() {
			return nil, errNoLease
		}
		return &stepThen{set: `pending_effect = '', lease_expires = ?`, guard: `status = 'running'`,
			args: []any{nanos(then.LeaseUntil)}}, nil
	case then.Finish == agent.StatusCancelled:
		return nil, errors.New("a segment does not cancel its run")
	case then.Finish != "":
		if !then.Finish.Terminal() {
			return nil, fmt.Errorf("finishing as %q: %w", then.Finish, errNotTerminal)
		}
		return &stepThen{set: `status = ?, reason = ?, error = ?, finished_at = ?, suspended = NULL, lease_expires = 0`,
			guard: `status NOT IN ` + terminal,
			args:  []any{string(then.Finish), string(then.Reason), then.Error, time.Now().UnixNano()}}, nil
	}
	return nil, nil
}
