package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// renewer keeps the leases of every segment of one runtime: one statement
// per interval (Store.RunRenewLeases) for all the leases that need it,
// however many runs are in flight, instead of a heartbeat per segment that
// renewed its own — at 10,000 runs in flight, 500 statements a second at
// rest. It ticks every third of the lease and renews the leases last set
// more than a sixth of it ago, so a lease is renewed before half of it has
// passed (a fence or a boundary may have set it meanwhile), and a short run
// whose claim is still fresh costs no renewal at all.
//
// A segment whose lease was not renewed lost it: the run was cancelled
// (the row says so: the segment's context ends with ErrRunCancelled) or
// someone else holds it now (ErrLeaseLost), as the heartbeat told it
// before. Only a read of the row says which: the lost runs' statuses are
// read in one query.
//
// Its goroutine runs while some segment holds a lease, and exits once none
// does.
type renewer struct {
	store  Store
	lease  time.Duration
	now    func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	held    map[string]*holder // by lease owner: one per segment
	running bool               // the goroutine is running
	idle    chan struct{}      // tells the goroutine the last lease was let go
	// endRound ends the renewal under way, if any: once no segment is
	// left, nobody waits for it (a shutdown must not wait for a store
	// that hangs).
	endRound context.CancelFunc
	wg       sync.WaitGroup
}

// holder is one segment's lease.
type holder struct {
	Lease
	// leased is the segment's: when the lease was last set, Unix
	// nanoseconds (segment.leased).
	leased *atomic.Int64
	// lose ends the segment's context with the cause: ErrRunCancelled
	// or ErrLeaseLost.
	lose context.CancelCauseFunc
}

func newRenewer(store Store, lease time.Duration, now func() time.Time, logger *slog.Logger) *renewer {
	return &renewer{store: store, lease: lease, now: now, logger: logger,
		held: map[string]*holder{}, idle: make(chan struct{}, 1)}
}

// hold keeps s's lease renewed until release is called; lose ends the
// segment if the lease is lost.
func (r *renewer) hold(s *segment, lose context.CancelCauseFunc) (release func()) {
	h := &holder{Lease: Lease{RunID: s.run.ID, Owner: s.owner}, leased: &s.leased, lose: lose}
	r.mu.Lock()
	r.held[h.Owner] = h
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop()
	}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.held[h.Owner] == h {
			delete(r.held, h.Owner)
		}
		if len(r.held) == 0 {
			if r.endRound != nil {
				r.endRound()
			}
			select {
			case r.idle <- struct{}{}:
			default:
			}
		}
	}
}

// wait returns once the goroutine has exited: call it when no segment is
// left.
func (r *renewer) wait() { r.wg.Wait() }

func (r *renewer) loop() {
	defer r.wg.Done()
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.renew()
		case <-r.idle:
			r.mu.Lock()
			if len(r.held) == 0 {
				r.running = false
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
		}
	}
}

// renew renews every lease last set more than a sixth of the lease ago, and
// ends the segments whose lease it could not renew.
func (r *renewer) renew() {
	now := r.now()
	// The statement is everyone's: no one segment's context bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), r.lease/3)
	defer cancel()
	r.mu.Lock()
	r.endRound = cancel
	defer func() {
		r.mu.Lock()
		r.endRound = nil
		r.mu.Unlock()
	}()
	var due []*holder
	for _, h := range r.held {
		if now.Sub(time.Unix(0, h.leased.Load())) >= r.lease/6 {
			due = append(due, h)
		}
	}
	r.mu.Unlock()
	if len(due) == 0 {
		return // nothing needs a write
	}
	leases := make([]Lease, len(due))
	for i, h := range due {
		leases[i] = h.Lease
	}
	renewed, err := r.store.RunRenewLeases(ctx, leases, now.Add(r.lease))
	if err != nil {
		// As a failed heartbeat: try again at the next tick. (Ended by
		// the last segment leaving: nothing to say.)
		if !errors.Is(ctx.Err(), context.Canceled) {
			r.logger.Warn("agent: renewing leases failed", "leases", len(leases), "error", err)
		}
		return
	}
	ok := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	var lost []*holder
	r.mu.Lock()
	for _, h := range due {
		switch {
		case ok[h.RunID]:
			storeMax(h.leased, now.UnixNano())
		case r.held[h.Owner] == h: // not let go meanwhile: the lease is gone
			delete(r.held, h.Owner)
			lost = append(lost, h)
		}
	}
	r.mu.Unlock()
	if len(lost) > 0 {
		r.tellLost(ctx, lost)
	}
}

// tellLost ends each segment of lost with why its lease is gone, read from
// the row: cancelled, or no longer ours. A failed read is not a
// cancellation.
func (r *renewer) tellLost(ctx context.Context, lost []*holder) {
	ids := make([]string, len(lost))
	for i, h := range lost {
		ids[i] = h.RunID
	}
	statuses, err := r.store.RunStatuses(ctx, ids)
	if err != nil {
		r.logger.Warn("agent: probing runs whose lease was lost failed; treating them as not cancelled", "runs", len(ids), "error", err)
	}
	for _, h := range lost {
		if statuses[h.RunID] == StatusCancelled {
			h.lose(ErrRunCancelled)
		} else {
			h.lose(ErrLeaseLost)
		}
	}
}

// storeMax sets v to n unless it holds a later time already (a fence set
// the lease meanwhile).
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if old >= n || v.CompareAndSwap(old, n) {
			return
		}
	}
}
