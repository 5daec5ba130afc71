package sqlstore

import (
	"context"
	"sync"
)

// writeGate orders the SQLite writes of andon's own code: one at a time
// (there is one writer connection), the urgent ones first. A cancel is
// urgent: the run row must say cancelled before this process stops the
// call on the wire, so every write queued ahead of it — the steps of runs
// that have just ended, their fences, a burst of new runs — would be time
// added to "stop means stop". Without the gate, andon's writers would
// wait at database/sql's pool, which hands a freed connection to a waiter
// chosen at random. River's own writes (job fetches and completions) take
// the connection without the gate; they are few at a time and short.
type writeGate struct {
	mu     sync.Mutex
	busy   bool
	urgent []chan struct{}
	normal []chan struct{}
}

// urgentKey marks a context whose writes go first.
type urgentKey struct{}

// urgent returns ctx with its SQLite writes put ahead of the others.
func urgent(ctx context.Context) context.Context { return context.WithValue(ctx, urgentKey{}, true) }

func isUrgent(ctx context.Context) bool { v, _ := ctx.Value(urgentKey{}).(bool); return v }

// acquire waits for the gate, or for ctx to end.
func (g *writeGate) acquire(ctx context.Context) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	if isUrgent(ctx) {
		g.urgent = append(g.urgent, turn)
	} else {
		g.normal = append(g.normal, turn)
	}
	g.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		removed := remove(&g.urgent, turn) || remove(&g.normal, turn)
		g.mu.Unlock()
		if !removed { // handed the gate meanwhile: pass it on
			<-turn
			g.release()
		}
		return ctx.Err()
	}
}

// release hands the gate to the first urgent waiter, else the first other.
func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range []*[]chan struct{}{&g.urgent, &g.normal} {
		if len(*q) > 0 {
			next := (*q)[0]
			*q = (*q)[1:]
			close(next)
			return
		}
	}
	g.busy = false
}

// remove deletes turn from q, reporting whether it was there.
func remove(q *[]chan struct{}, turn chan struct{}) bool {
	for i, t := range *q {
		if t == turn {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}
