package node

import (
	"context"
	"log/slog"
	"sync"
	"time"
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
// Where a NOTIFY told the others, the job cancels wait until the storm is
// over (jobSettle): to the worker holding a run, its job's cancel is a
// second hint of what the NOTIFY already said, and a storm's are a
// transaction of a statement per job (River's JobCancel, each with its own
// NOTIFY to every River client) on the database the workers are reading
// the cancelled rows from at that moment (measured, PostgreSQL, serve and
// two workers, waves of 100: the job cancels of one wave took from 48 to
// 94 ms, while the workers' hinted reads took up to 23 ms for 38 rows).
// A queued job whose cancel waits meanwhile is harmless: a worker that
// takes it reads the run's row first and finds it cancelled. Without a
// bus (SQLite), or if the NOTIFY failed, the job cancel is the news, and
// goes at once.
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
	settle  settling

	mu      sync.Mutex
	pending []announcement
}

// settling is how long job cancels wait after a NOTIFY: until no cancel
// has been queued for quiet, and no longer than most after the first.
type settling struct{ quiet, most time.Duration }

// The announcer's settling: a storm's cancels come within a few
// milliseconds of each other, and the workers end the runs, and River
// their jobs, within a few hundred (measured, PostgreSQL, serve and two
// workers, waves of 100: 50 ms after a wave, 91–100 of its jobs were still
// running; 300 ms after, 0–11), so that by then the job cancels left to
// make are few (sqlstore's CancelRunJobs leaves finished jobs out).
const (
	jobSettleQuiet = 300 * time.Millisecond
	jobSettleMost  = 2 * time.Second
)

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
		stopped: make(chan struct{}), stop: stop, settle: settling{quiet: jobSettleQuiet, most: jobSettleMost}}
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
	var (
		jobs  []string // runs whose job cancel waits for the storm to settle
		first time.Time
		timer = time.NewTimer(time.Hour)
	)
	timer.Stop()
	for {
		select {
		case <-a.wake:
			later := a.announceQueued()
			if len(later) == 0 {
				continue
			}
			if len(jobs) == 0 {
				first = time.Now()
			}
			jobs = append(jobs, later...)
			timer.Reset(max(min(a.settle.quiet, a.settle.most-time.Since(first)), 0))
		case <-timer.C:
			a.cancelJobs(jobs)
			jobs = nil
		case <-ctx.Done():
			timer.Stop()
			a.cancelJobs(append(jobs, a.announceQueued()...)) // the last ones
			return
		}
	}
}

// announceQueued announces everything queued, in batches, and returns the
// runs whose job cancels are to wait for the storm to settle.
func (a *announcer) announceQueued() (later []string) {
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
			return later
		}
		later = append(later, a.announce(batch)...)
	}
}

// announce sends the NOTIFY of batch's runs that need one and cancels the
// jobs of those the NOTIFY did not reach the others for; it returns the
// runs it did reach them for, whose job cancels can wait.
func (a *announcer) announce(batch []announcement) (later []string) {
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
	if a.bus == nil {
		a.cancelJobs(runIDs)
		return nil
	}
	if len(unnotified) > 0 {
		if err := a.bus.NotifyCancelled(ctx, unnotified...); err != nil {
			a.logger.Warn("andon: telling other processes of cancels failed; their watchers' poll will see them", "runs", len(unnotified), "error", err)
			a.cancelJobs(runIDs)
			return nil
		}
	}
	return runIDs
}

// cancelJobs cancels the jobs of runIDs, maxAnnounce at a time.
func (a *announcer) cancelJobs(runIDs []string) {
	for len(runIDs) > 0 {
		n := min(len(runIDs), maxAnnounce)
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		if err := a.store.CancelRunJobs(ctx, runIDs[:n]); err != nil {
			a.logger.Warn("andon: cancelling runs' jobs failed; the workers' poll will see the cancels", "runs", n, "error", err)
		}
		cancel()
		runIDs = runIDs[n:]
	}
}

// close announces what is queued and stops.
func (a *announcer) close() {
	a.stop()
	<-a.stopped
}
