package oauth

import (
	"context"
)

// flight is one shared token leg: the callers that need a token for the
// same resource at the same time wait on one flight instead of each
// starting their own (single flight).
type flight struct {
	done    chan struct{}
	out     outcome
	err     error
	waiters int                     // guarded by Transport.mu
	cancel  context.CancelCauseFunc // ends the leg when the last waiter leaves
}

// share runs fn once for all callers that ask for name while it runs, and
// returns its result. fn runs on a context that keeps ctx's values (the
// run, the budget's bookkeeping, the audit's) but not the cancellation of
// the caller that happened to start it: a caller whose context ends stops
// waiting, and fn is cancelled only when no caller waits any more. Each of
// fn's HTTP legs has its own bound (LegTimeout).
func (t *Transport) share(ctx context.Context, name string, fn func(ctx context.Context) (outcome, error)) error {
	_, err := t.shareOutcome(ctx, name, fn)
	return err
}

// shareOutcome is share, returning fn's outcome as well.
func (t *Transport) shareOutcome(ctx context.Context, name string, fn func(ctx context.Context) (outcome, error)) (outcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t.mu.Lock()
	if t.flights == nil {
		t.flights = make(map[string]*flight)
	}
	f := t.flights[name]
	if f == nil {
		fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		t.flights[name] = f
		go func() {
			out, err := fn(fctx)
			t.mu.Lock()
			f.out, f.err = out, err
			if t.flights[name] == f {
				delete(t.flights, name)
			}
			t.mu.Unlock()
			cancel(nil)
			close(f.done)
		}()
	}
	f.waiters++
	t.mu.Unlock()

	select {
	case <-f.done:
		t.leave(f, nil)
		return f.out, f.err
	case <-ctx.Done():
		t.leave(f, context.Cause(ctx))
		return 0, ctx.Err()
	}
}

// leave records that a caller stopped waiting on f, and cancels f if it
// was the last, with that caller's reason: the leg's egress row then says
// "deadline exceeded" for a budget that passed and "cancelled" for a
// cancel, as any other leg's does.
func (t *Transport) leave(f *flight, cause error) {
	t.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	t.mu.Unlock()
	if last {
		f.cancel(cause)
	}
}
