package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
)

// Questions servers ask operators during runs: the input_requests table
// (migration 009), and the two transitions of a run that waits for one.

var _ agent.InputStore = (*Store)(nil)

const inputColumns = `id, run_id, server, tool, mode, message, schema, url, status, content, answered_by, created_at, expires_at, answered_at`

// RunAwaitInput implements [agent.InputStore]: in one transaction, the run
// moves from running to waiting_for_input, guarded by its lease owner (the
// lease stays), and only if it did is the question inserted.
func (s *Store) RunAwaitInput(ctx context.Context, q *agent.InputRequest, owner string) (bool, error) {
	what := "storing a question of run " + q.RunID
	if owner == "" {
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	won := false
	err := s.d.inTx(ctx, func(tx tx) error {
		var err error
		won, err = changedOne(tx.exec(ctx, `UPDATE runs SET status = 'waiting_for_input'
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, q.RunID, owner))
		if err != nil || !won {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO input_requests (`+inputColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, '', ?, ?, 0)`,
			q.ID, q.RunID, q.Server, q.Tool, string(q.Mode), q.Message, nullBytes(q.Schema), q.URL,
			nanos(q.CreatedAt), nanos(q.ExpiresAt))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return won, nil
}

// RunInputDone implements [agent.InputStore]: in one transaction, the
// question ends (final, if it was still pending) and loses its content,
// and the run goes back to running if it still waits and owner holds it.
func (s *Store) RunInputDone(ctx context.Context, id, owner string, final agent.InputStatus, leaseUntil time.Time) (bool, error) {
	what := "ending the wait for question " + id
	if err := checkLease(owner, leaseUntil); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if final == agent.InputPending {
		return false, fmt.Errorf("sqlstore: %s: a question cannot end pending", what)
	}
	back := false
	err := s.d.inTx(ctx, func(tx tx) error {
		if _, err := tx.exec(ctx, `UPDATE input_requests
			SET status = CASE WHEN status = 'pending' THEN ? ELSE status END, content = NULL
			WHERE id = ?`, string(final), id); err != nil {
			return err
		}
		var err error
		back, err = changedOne(tx.exec(ctx, `UPDATE runs SET status = 'running', lease_expires = ?
			WHERE id = (SELECT run_id FROM input_requests WHERE id = ?)
				AND status = 'waiting_for_input' AND lease_owner = ?`, nanos(leaseUntil), id, owner))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return back, nil
}

// InputAnswer implements [agent.InputStore]: pending → status, guarded.
func (s *Store) InputAnswer(ctx context.Context, id string, status agent.InputStatus, content json.RawMessage, by string, at time.Time) (bool, error) {
	what := "answering question " + id
	if status != agent.InputAccepted && status != agent.InputDeclined {
		return false, fmt.Errorf("sqlstore: %s: %q is not a reply", what, status)
	}
	if status == agent.InputDeclined {
		content = nil
	}
	return s.transition(ctx, what, `UPDATE input_requests SET status = ?, content = ?, answered_by = ?, answered_at = ?
		WHERE id = ? AND status = 'pending'`, string(status), nullBytes(content), by, nanos(at), id)
}

// InputGet implements [agent.InputStore].
func (s *Store) InputGet(ctx context.Context, id string) (*agent.InputRequest, error) {
	q, err := scanInput(s.d.queryRow(ctx, `SELECT `+inputColumns+` FROM input_requests WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: question %s: %w", id, agent.ErrInputNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading question %s: %w", id, err)
	}
	return q, nil
}

// InputPending implements [agent.InputStore]: the newest pending question
// of the run, if the run waits for input. (A question left pending by a
// worker that died stays so; its run, reaped, no longer waits, so it is
// not returned.)
func (s *Store) InputPending(ctx context.Context, runID string) (*agent.InputRequest, error) {
	q, err := scanInput(s.d.queryRow(ctx, `SELECT `+inputColumns+` FROM input_requests
		WHERE run_id = ? AND status = 'pending'
			AND EXISTS (SELECT 1 FROM runs WHERE runs.id = input_requests.run_id AND runs.status = 'waiting_for_input')
		ORDER BY created_at DESC, id DESC LIMIT 1`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the question of run %s: %w", runID, err)
	}
	q.Content = nil
	return q, nil
}

// InputList implements [agent.InputStore].
func (s *Store) InputList(ctx context.Context, runID string) ([]*agent.InputRequest, error) {
	what := "listing the questions of run " + runID
	rs, err := s.d.query(ctx, `SELECT `+inputColumns+` FROM input_requests WHERE run_id = ? ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rs.Close()
	qs, err := collect(rs, what, scanInput)
	for _, q := range qs {
		q.Content = nil
	}
	return qs, err
}

func scanInput(sc scanner) (*agent.InputRequest, error) {
	var q agent.InputRequest
	var mode, status string
	var created, expires, answered int64
	var schema, content []byte
	if err := sc.Scan(&q.ID, &q.RunID, &q.Server, &q.Tool, &mode, &q.Message, &schema, &q.URL, &status, &content,
		&q.By, &created, &expires, &answered); err != nil {
		return nil, err
	}
	q.Mode, q.Status = agent.InputMode(mode), agent.InputStatus(status)
	if schema != nil {
		q.Schema = schema
	}
	if content != nil {
		q.Content = content
	}
	q.CreatedAt, q.ExpiresAt, q.AnsweredAt = fromNanos(created), fromNanos(expires), fromNanos(answered)
	return &q, nil
}
