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
// instead of one each. Requests of different keys never share a batch,
// nor wait for each other. Unguarded finishes (finish_batch.go), step
// appends on SQLite (step_batch.go) and run inserts (run_insert.go) are
// written this way.

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

// oneGroup is the key of a group commit whose requests all share batches.
type oneGroup struct{}

// unkeyed adapts the write of a group whose requests all share batches.
func unkeyed[R request](write func(context.Context, []R)) func(context.Context, oneGroup, []R) {
	return func(ctx context.Context, _ oneGroup, batch []R) { write(ctx, batch) }
}

// groupCommit groups concurrent requests of type R by key K; see above.
// Its write is given each batch of a key, in arrival order, and sets every
// request's answer; it must not fail as a whole.
type groupCommit[K comparable, R request] struct {
	max     int           // requests per batch, at most
	timeout time.Duration // bounds one batch's write
	write   func(ctx context.Context, key K, batch []R)
	// gather, if set, runs before a leader's first batch is taken, to let
	// the rest of a wave join it (finish_batch.go).
	gather func(key K)

	mu      sync.Mutex
	pending map[K][]R
	writing map[K]bool // a batch of this key is being written
}

func newGroupCommit[K comparable, R request](max int, timeout time.Duration, write func(context.Context, K, []R)) *groupCommit[K, R] {
	return &groupCommit[K, R]{max: max, timeout: timeout, write: write, pending: map[K][]R{}, writing: map[K]bool{}}
}

// do writes req with the requests of key waiting when its turn comes, and
// returns once its answer is in. A caller whose ctx ends while req still
// waits leaves with ctx's error and nothing written; once req's batch is
// being written, it waits for the batch (bounded by the group's timeout),
// so that its answer says what the database holds.
func (g *groupCommit[K, R]) do(ctx context.Context, key K, req R) error {
	w := req.wait()
	g.mu.Lock()
	g.pending[key] = append(g.pending[key], req)
	lead := !g.writing[key]
	g.writing[key] = true
	g.mu.Unlock()
	if lead {
		if g.gather != nil {
			g.gather(key)
		}
		g.drain(context.WithoutCancel(ctx), key, w)
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if !w.taken {
		rs := g.pending[key]
		for i, r := range rs {
			if r.wait() == w {
				g.pending[key] = append(rs[:i], rs[i+1:]...)
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

// waiting returns how many requests of key wait for a batch.
func (g *groupCommit[K, R]) waiting(key K) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending[key])
}

// drain writes the waiting requests of key, a batch per write, until none
// waits; then the next request of key leads again. Once own's batch is
// written, a goroutine of its own goes on, so that the leader's caller is
// not kept writing the others' requests.
func (g *groupCommit[K, R]) drain(ctx context.Context, key K, own *waiter) {
	for {
		g.mu.Lock()
		rs := g.pending[key]
		n := min(len(rs), g.max)
		batch := rs[:n:n]
		if n == len(rs) {
			delete(g.pending, key)
		} else {
			g.pending[key] = rs[n:]
		}
		if n == 0 {
			delete(g.writing, key)
			g.mu.Unlock()
			return
		}
		for _, r := range batch {
			r.wait().taken = true
		}
		g.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, g.timeout)
		g.write(wctx, key, batch)
		cancel()
		for _, r := range batch {
			close(r.wait().done)
		}
		if own != nil && isClosed(own.done) {
			go g.drain(ctx, key, nil)
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
