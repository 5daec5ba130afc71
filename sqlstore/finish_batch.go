package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// Group commit of unguarded finishes. An operator's "stop everything", or
// many operators at once, is a storm of RunFinish calls without an owner:
// cancels. Each is one guarded UPDATE, but on SQLite every one of them
// waits for the one writer, so the hundredth waits for ninety-nine
// commits. Instead, the finishes that arrive while one is being written
// wait together and go in the next statement, which finishes all of them:
// one UPDATE … WHERE id IN (…) … RETURNING id, whose guard is the same as
// one finish's, row by row, so of two cancels of one run one still wins,
// and the winners are the ids it returns. A finish alone is written at
// once, as before; a storm costs a few statements instead of one each.

// maxFinishBatch bounds the ids of one statement.
const maxFinishBatch = 1000

// A leader first lets the rest of its wave join it. A hundred cancels
// released together reach the batcher over about a millisecond (measured
// under andon-load, 1,000 runs in flight, PostgreSQL); a leader that wrote
// at once wrote a statement for itself alone, and the other ninety-nine
// waited for it to end before theirs began, so they paid two statements.
// Instead the leader yields its processor: if that brought another finish
// of its key, a wave is arriving, and it goes on yielding until none has
// arrived for finishGatherQuiet, or finishGatherMax has passed, and then
// writes them all. Yielding, not sleeping: a wave's goroutines are
// runnable, so a yield runs them up to their wait here, and a timer this
// short would wake late (the scheduler sleeps in milliseconds when it has
// nothing to run). A finish alone costs its leader one yield.
const (
	finishGatherQuiet = 100 * time.Microsecond
	finishGatherMax   = 2 * time.Millisecond
)

// finishKey is what the finishes of one statement share.
type finishKey struct {
	to     agent.Status
	reason agent.Reason
	text   string
	// cancel: an operator's cancel (RunCancel), whose guard also says who
	// may cancel and that the run has no task (run_cancel.go).
	cancel bool
	// owner, for a cancel: the run's owner must be this actor. Empty: an
	// admin's cancel, any run.
	owner string
	// notify, for a cancel: the statement announces the runs it cancels
	// to the other processes, where the dialect can (PostgreSQL's NOTIFY).
	notify bool
	// byToken, for a cancel: who may cancel is the API token of this
	// hash, read and re-checked in the statement (run_cancel_token.go),
	// not owner.
	byToken tokenGuard
	// trace, for a cancel: the traceparent of the cancel's span, written
	// to the rows it cancels (agent.Run.CancelTrace). Empty when not
	// tracing; traced cancels each have their own, so they do not share
	// a statement.
	trace string
}

// finishReq is one RunFinish waiting for its statement.
type finishReq struct {
	waiter
	id  string
	won bool
	tok *token.Token // a cancel by token: the token its statement read, nil if none
	err error
}

// finishBatcher groups concurrent unguarded finishes by key
// (group_commit.go), each batch's leader gathering its wave first.
type finishBatcher struct {
	// gatherQuiet and gatherMax: finishGatherQuiet and finishGatherMax;
	// tests lengthen them.
	gatherQuiet, gatherMax time.Duration
	group                  *groupCommit[finishKey, *finishReq]
}

// finishWriteTimeout bounds one batch's statement.
const finishWriteTimeout = 30 * time.Second

func newFinishBatcher(write func(context.Context, finishKey, []*finishReq)) *finishBatcher {
	b := &finishBatcher{gatherQuiet: finishGatherQuiet, gatherMax: finishGatherMax,
		group: newGroupCommit(maxFinishBatch, finishWriteTimeout, write)}
	b.group.gather = b.gather
	return b
}

// finish finishes run id as key says, with every finish of the same key
// that is waiting when its turn comes. It waits for its statement even if
// ctx ends meanwhile (a statement has at most maxFinishBatch rows and its
// own time bound), so that its answer says what the row says.
func (s *Store) finishBatched(ctx context.Context, key finishKey, id string) (bool, error) {
	req := s.finishWait(ctx, key, id)
	return req.won, req.err
}

// finishWait is finishBatched, answering with the whole request.
func (s *Store) finishWait(ctx context.Context, key finishKey, id string) *finishReq {
	end := s.cancelSpan(ctx, id) // a cancel's statement, in its caller's trace
	req := &finishReq{waiter: newWaiter(), id: id}
	_ = s.finishes.group.do(context.WithoutCancel(ctx), key, req) // a ctx without end: no error
	end(req.won, req.err)
	return req
}

// gather waits, yielding, while finishes of key keep arriving (see
// finishGatherQuiet). The leader's own finish is pending already.
func (b *finishBatcher) gather(key finishKey) {
	start := time.Now()
	seen, last := 1, start
	for {
		runtime.Gosched()
		n := b.group.waiting(key)
		now := time.Now()
		switch {
		case n > seen:
			seen, last = n, now
		case seen == 1:
			return // alone: no wave to wait for
		}
		if n >= maxFinishBatch || now.Sub(last) >= b.gatherQuiet || now.Sub(start) >= b.gatherMax {
			return
		}
	}
}

// writeFinishes writes one batch of finishes of key in one statement.
func (s *Store) writeFinishes(ctx context.Context, key finishKey, batch []*finishReq) {
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	// Urgent: the row must say cancelled before the call on the wire
	// is stopped, so this write goes ahead of the others.
	won, tok, err := s.finishMany(urgent(ctx), key, ids)
	for _, r := range batch {
		// Two cancels of one run in one batch: the first wins,
		// as the first of two statements would.
		r.won, r.tok, r.err = won[r.id], tok, err
		delete(won, r.id)
	}
}

// finishMany is RunFinish without an owner for every run of ids, in one
// statement; it returns the runs it finished (and, for a cancel by token,
// the token its statement read).
func (s *Store) finishMany(ctx context.Context, key finishKey, ids []string) (map[string]bool, *token.Token, error) {
	stmt, args := finishUpdate(s.d, key, ids)
	if key.byToken.hash != "" {
		return s.cancelManyByToken(ctx, key, stmt, args)
	}
	stmt += ` RETURNING id`
	if key.notify {
		stmt = s.d.announcing(stmt)
	}
	rs, err := s.d.query(ctx, stmt, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: finishing %d runs: %w", len(ids), err)
	}
	defer rs.Close()
	won, err := collect(rs, "finishing runs", scanID)
	if err != nil {
		return nil, nil, err
	}
	return idSet(won), nil, nil
}

// finishUpdate is finishMany's guarded UPDATE of the runs ids, without its
// RETURNING clause, and its arguments.
func finishUpdate(d dialect, key finishKey, ids []string) (string, []any) {
	in, list := d.idIn(ids)
	set, args := "", []any{string(key.to), string(key.reason), key.text, time.Now().UnixNano()}
	if key.trace != "" {
		set = `, cancel_trace = ?`
		args = append(args, key.trace)
	}
	stmt := `UPDATE runs SET status = ?, reason = ?, error = ?, finished_at = ?,
			suspended = NULL, lease_expires = 0` + set + `
		WHERE id ` + in + ` AND status NOT IN ` + terminal
	args = append(args, list)
	if key.cancel {
		stmt, args = cancelGuard(stmt, args, key.owner)
	}
	return stmt, args
}

// idSet is ids as a set.
func idSet(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}
