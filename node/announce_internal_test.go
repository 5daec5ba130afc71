package node

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/sqlstore"
)

// recording is a Store whose CancelRunJobs, and a bus whose NotifyCancelled,
// record the runs they were given.
type recording struct {
	Store // nil: anything else panics
	mu    sync.Mutex
	jobs  []string
	nots  []string
}

func (r *recording) CancelRunJobs(_ context.Context, ids []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, ids...)
	return nil
}

func (r *recording) NotifyCancelled(_ context.Context, ids ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nots = append(r.nots, ids...)
	return nil
}

func (r *recording) ListenCancelled(context.Context, func(...string), ...sqlstore.ListenOption) error {
	return nil
}

// The announcer sends no second NOTIFY for a cancel whose own statement
// announced it, but still cancels its job; a cancel not announced gets
// both; a run executing here gets neither.
func TestTheAnnouncerDoesNotRepeatTheCancelsNotify(t *testing.T) {
	rec := &recording{}
	a := newAnnouncer(rec, rec, func(id string) bool { return id == "local" }, slog.New(slog.DiscardHandler))
	ctx := t.Context()
	a.onCancel(ctx, "announced", true)
	a.onCancel(ctx, "unannounced", false)
	a.onCancel(ctx, "local", false)
	a.close() // announces what is queued
	slices.Sort(rec.jobs)
	if !slices.Equal(rec.nots, []string{"unannounced"}) || !slices.Equal(rec.jobs, []string{"announced", "unannounced"}) {
		t.Fatalf("NOTIFY for %v, job cancels for %v; want NOTIFY for [unannounced] only, job cancels for [announced unannounced]", rec.nots, rec.jobs)
	}
}

// noted reports what rec has recorded so far.
func (r *recording) noted() (nots, jobs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.nots), slices.Clone(r.jobs)
}

// With a bus, the job cancels wait for the storm to settle: the NOTIFY goes
// at once, the jobs' cancels only once no cancel has come for a while (here
// longer than the test, so: when the announcer closes). Without a bus the
// job cancel is the news, and goes at once.
func TestTheAnnouncerCancelsJobsAfterTheStormWhereANotifyWent(t *testing.T) {
	rec := &recording{}
	a := newAnnouncer(rec, rec, func(string) bool { return false }, slog.New(slog.DiscardHandler))
	a.settle = settling{quiet: time.Hour, most: time.Hour}
	ctx := t.Context()
	hang := time.After(10 * time.Second) // only keeps a broken test from hanging
	notified := func(n int) {
		for nots, _ := rec.noted(); len(nots) < n; nots, _ = rec.noted() {
			select {
			case <-hang:
				t.Fatalf("NOTIFY for %v, want %d runs", nots, n)
			case <-time.After(time.Millisecond):
			}
		}
	}
	a.onCancel(ctx, "announced", true)
	a.onCancel(ctx, "unannounced", false)
	notified(1)
	// A later batch's NOTIFY: the first batch is done with by then.
	a.onCancel(ctx, "later", false)
	notified(2)
	if _, jobs := rec.noted(); len(jobs) != 0 {
		t.Fatalf("jobs of %v cancelled while the storm had not settled", jobs)
	}
	a.close()
	if nots, jobs := rec.noted(); !slices.Equal(nots, []string{"unannounced", "later"}) || !slices.Equal(sorted(jobs), []string{"announced", "later", "unannounced"}) {
		t.Fatalf("after close: NOTIFY for %v, job cancels for %v; want [unannounced later], [announced later unannounced]", nots, jobs)
	}

	noBus := &recording{}
	b := newAnnouncer(noBus, nil, func(string) bool { return false }, slog.New(slog.DiscardHandler))
	b.settle = settling{quiet: time.Hour, most: time.Hour}
	defer b.close()
	b.onCancel(ctx, "r1", false)
	for _, jobs := noBus.noted(); len(jobs) == 0; _, jobs = noBus.noted() {
		select {
		case <-hang:
			t.Fatal("without a bus, the job cancel waited")
		case <-time.After(time.Millisecond):
		}
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
