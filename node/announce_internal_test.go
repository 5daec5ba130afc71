package node

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

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

func (r *recording) ListenCancelled(context.Context, func(string), ...sqlstore.ListenOption) error {
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
