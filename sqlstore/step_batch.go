package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Group commit of step appends, on SQLite. When a storm of cancels stops
// thousands of calls at once, every segment records its cancelled call's
// step at the same moment, and on the one writer each append was a
// transaction of its own behind all the others: at 10,000 runs, half the
// segments ran out of their bookkeeping budget before their turn came and
// their last step was never written. Instead, the appends that arrive
// while one is being written wait together and go in the next
// transaction: each still its own guarded INSERT (the lease check, the
// seq, the insert: one statement, as alone), with its own result and seq,
// in the order they arrived — within one transaction each sees the steps
// before it, so the numbers of a run stay distinct and consecutive. An
// append alone is written at once, as one statement, as before.
//
// PostgreSQL has no such batcher: its appends go in parallel over the
// pool, and the server commits concurrent transactions together.

// maxStepBatch bounds the appends of one transaction: a cancel's write
// (urgent, write_gate.go) waits at most for one batch.
const maxStepBatch = 32

// stepWriteTimeout bounds one batch's transaction.
const stepWriteTimeout = 30 * time.Second

// stepReq is one StepAppend waiting for its batch.
type stepReq struct {
	waiter
	args []any // the arguments of the dialect's stepInsert
	// Set by the batch before done is closed: seq, or noRow (the guard
	// matched no run held by owner), or err.
	seq   int
	noRow bool
	err   error
}

// appendBatched inserts one step with the appends waiting when its turn
// comes (group_commit.go), and returns its seq, or sql.ErrNoRows if the
// guard matched nothing.
func (s *Store) appendBatched(ctx context.Context, args []any) (int, error) {
	req := &stepReq{waiter: newWaiter(), args: args}
	if err := s.steps.do(ctx, oneGroup{}, req); err != nil {
		return 0, err
	}
	switch {
	case req.err != nil:
		return 0, req.err
	case req.noRow:
		return 0, sql.ErrNoRows
	}
	return req.seq, nil
}

// writeStepBatch runs batch's guarded inserts, alone as one statement, or
// together in one transaction. If the transaction fails, each is tried
// alone, so that one append's failure is its own.
func (s *Store) writeStepBatch(ctx context.Context, batch []*stepReq) {
	if len(batch) > 1 {
		err := s.d.inTx(ctx, func(t tx) error {
			for _, r := range batch {
				r.seq, r.noRow, r.err = 0, false, nil
				if err := s.insertStep(ctx, t, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			return
		}
	}
	for _, r := range batch {
		r.seq, r.noRow, r.err = 0, false, nil
		if err := s.insertStep(ctx, s.d, r); err != nil {
			r.err = err
		}
	}
}

// insertStep runs r's guarded insert on q and notes its result; it returns
// an error only if the statement failed.
func (s *Store) insertStep(ctx context.Context, q querier, r *stepReq) error {
	err := q.queryRow(ctx, s.d.stepInsert(), r.args...).Scan(&r.seq)
	if errors.Is(err, sql.ErrNoRows) {
		r.noRow = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("inserting a step: %w", err)
	}
	return nil
}
