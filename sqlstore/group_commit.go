package sqlstore

import (
	"context"
	"sync"
	"time"
)

// A group commit writes the requests of one kind that arrive while one
// batch of them is being written together, in the next transaction: the
// first request leads and writes at once, alone, as it would have without
// the group; those that come meanwhile wait, and the leader (or a
// goroutine it leaves behind) writes them as one batch, then the next,
// until none waits. Nothing waits for a batch to fill: a request alone is
// written as soon as it comes, and a storm costs a few transactions
// instead of one each. Step appends on SQLite (step_batch.go) and run
// inserts (run_insert.go) are written this way.

// waiter is what every request of a group commit carries: the group's
// bookkeeping, which its batch's write must not touch.
type waiter struct {
	taken bool          // in a batch being written: its caller waits for it
	done  chan struct{} // closed once its batch is written
}

func newWaiter() waiter { return waiter{done: make(chan struct{})} }

func (w *waiter) wait() *waiter { return w }

// request is a request of a group commit: a struct embedding waiter.
type request interface{ wait() *waiter }

// groupCommit groups concurrent requests of type R; see above. Its write
// is given each batch, in arrival order, and sets every request's answer;
// it must not fail as a whole.
type groupCommit[R request] struct {
	max     int           // requests per batch, at most
	timeout time.Duration // bounds one batch's write
	write   func(ctx context.Context, batch []R)

	mu      sync.Mutex
	pending []R
	writing bool // a batch is being written
}

func newGroupCommit[R request](max int, timeout time.Duration, write func(context.Context, []R)) *groupCommit[R] {
	return &groupCommit[R]{max: max, timeout: timeout, write: write}
}

// do writes req with the requests waiting when its turn comes, and returns
// once its answer is in. A caller whose ctx ends while req still waits
// leaves with ctx's error and nothing written; once req's batch is being
// written, it waits for the batch (bounded by the group's timeout), so
// that its answer says what the database holds.
func (g *groupCommit[R]) do(ctx context.Context, req R) error {
	w := req.wait()
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		g.drain(context.WithoutCancel(ctx), w)
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if !w.taken {
		for i, r := range g.pending {
			if r.wait() == w {
				g.pending = append(g.pending[:i], g.pending[i+1:]...)
				break
			}
		}
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Unlock()
	<-w.done
	return nil
}

// drain writes the waiting requests, a batch per write, until none waits;
// then the next request leads again. Once own's batch is written, a
// goroutine of its own goes on, so that the leader's caller is not kept
// writing the others' requests.
func (g *groupCommit[R]) drain(ctx context.Context, own *waiter) {
	for {
		g.mu.Lock()
		n := min(len(g.pending), g.max)
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		if n == 0 {
			g.pending = nil
			g.writing = false
			g.mu.Unlock()
			return
		}
		for _, r := range batch {
			r.wait().taken = true
		}
		g.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, g.timeout)
		g.write(wctx, batch)
		cancel()
		for _, r := range batch {
			close(r.wait().done)
		}
		if own != nil && isClosed(own.done) {
			go g.drain(ctx, nil)
			return
		}
	}
}

// isClosed reports whether c is closed: a request's answer is in.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
