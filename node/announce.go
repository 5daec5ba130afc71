package node

import (
	"context"
	"log/slog"
	"sync"
)

// announcer tells the other processes on the database of the runs this
// one cancels — by bus (NOTIFY), if there is one, then by cancelling the
// runs' River jobs, which reaches the worker holding each on either
// backend — off the cancel's path. It is the runtime's OnCancel hook:
// the cancel has already moved the row and cancelled this process's calls
// when it is called; telling the others is a hint (their watchers read
// the row), so it need not hold up the cancel's answer, and it must not
// hold up the next cancel's write either. So the hook only queues the run,
// and one goroutine announces whatever has queued meanwhile together: one
// NOTIFY statement and one transaction of job cancels for a storm,
// instead of a statement and a transaction for each.
//
// On PostgreSQL, an operator's cancel of a run with no call here is
// announced by the cancel's own statement (sqlstore's RunCancel: the
// NOTIFY commits with the row, or not at all); for it, only the job cancel
// is left to do here. A NOTIFY is sent from here only for a cancel that
// took the longer path (a run with MCP tasks).
//
// A run this process is executing needs no announcement: no other process
// has a call of it, and its job ends when its segment does. A failed
// announcement is logged; the others' polls still see the cancel. An
// announcement queued when the node closes is made before Close returns
// (within notifyTimeout).
type announcer struct {
	store   Store
	bus     cancelBus // nil: none
	local   func(runID string) bool
	logger  *slog.Logger
	wake    chan struct{} // holds one wake-up
	stopped chan struct{}
	stop    context.CancelFunc

	mu      sync.Mutex
	pending []announcement
}

// announcement is a cancelled run to announce; notified: the cancel's own
// statement sent its NOTIFY, and only the job cancel is left.
type announcement struct {
	runID    string
	notified bool
}

// maxAnnounce bounds the runs of one announcement.
const maxAnnounce = 1000

func newAnnouncer(st Store, bus cancelBus, local func(string) bool, logger *slog.Logger) *announcer {
	ctx, stop := context.WithCancel(context.Background())
	a := &announcer{store: st, bus: bus, local: local, logger: logger, wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), stop: stop}
	go a.run(ctx)
	return a
}

// onCancel is the runtime's OnCancel hook: it queues runID and returns.
// announced: the cancel's statement sent the NOTIFY already.
func (a *announcer) onCancel(_ context.Context, runID string, announced bool) {
	if a.local(runID) && !announced {
		return
	}
	a.mu.Lock()
	a.pending = append(a.pending, announcement{runID, announced})
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *announcer) run(ctx context.Context) {
	defer close(a.stopped)
	for {
		select {
		case <-a.wake:
			a.announceQueued()
		case <-ctx.Done():
			a.announceQueued() // the last ones
			return
		}
	}
}

// announceQueued announces everything queued, in batches.
func (a *announcer) announceQueued() {
	for {
		a.mu.Lock()
		batch := a.pending
		if len(batch) > maxAnnounce {
			a.pending = batch[maxAnnounce:]
			batch = batch[:maxAnnounce:maxAnnounce]
		} else {
			a.pending = nil
		}
		a.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		a.announce(batch)
	}
}

func (a *announcer) announce(batch []announcement) {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	runIDs := make([]string, len(batch))
	var unnotified []string
	for i, an := range batch {
		runIDs[i] = an.runID
		if !an.notified {
			unnotified = append(unnotified, an.runID)
		}
	}
	if a.bus != nil && len(unnotified) > 0 {
		if err := a.bus.NotifyCancelled(ctx, unnotified...); err != nil {
			a.logger.Warn("andon: telling other processes of cancels failed; their watchers' poll will see them", "runs", len(unnotified), "error", err)
		}
	}
	if err := a.store.CancelRunJobs(ctx, runIDs); err != nil {
		a.logger.Warn("andon: cancelling runs' jobs failed; the workers' poll will see the cancels", "runs", len(runIDs), "error", err)
	}
}

// close announces what is queued and stops.
func (a *announcer) close() {
	a.stop()
	<-a.stopped
}
