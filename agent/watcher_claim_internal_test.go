package agent

import (
	"context"
	"errors"
	"testing"
	"time"
)

// noStatuses is a StatusReader whose runs all read as running.
type noStatuses struct{}

func (noStatuses) RunStatuses(context.Context, []string) (map[string]Status, error) {
	return map[string]Status{}, nil
}

// A run watched before its claim is cancelled by a cancel at any time, but
// counts as executing here (Watches: a cancel is not announced to other
// processes) only once the claim has won; a claim that lost leaves no
// trace.
func TestAWatchBeforeAClaimCountsOnceTheClaimWins(t *testing.T) {
	t.Parallel()
	w := NewWatcher(noStatuses{}, time.Hour, nil)
	ctx, won, stop := w.watchClaim(context.Background(), "r1")
	if w.Watches("r1") {
		t.Fatal("Watches before the claim won")
	}
	won()
	if !w.Watches("r1") {
		t.Fatal("not Watches after the claim won")
	}
	w.cancel("r1")
	if !errors.Is(context.Cause(ctx), ErrRunCancelled) {
		t.Fatalf("the watched context after a cancel: cause %v, want ErrRunCancelled", context.Cause(ctx))
	}
	stop()
	if w.Watches("r1") {
		t.Fatal("Watches after the watch stopped")
	}

	_, _, stop = w.watchClaim(context.Background(), "r2")
	_, unwatch := w.Watch(context.Background(), "r2") // a call of the run, watched meanwhile
	if !w.Watches("r2") {
		t.Fatal("not Watches with a call watched beside an unclaimed watch")
	}
	unwatch()
	stop() // the claim lost
	w.mu.Lock()
	left := len(w.watched)
	w.mu.Unlock()
	if left != 0 || w.Watches("r2") {
		t.Fatalf("after a lost claim: %d runs watched, Watches %v; want none", left, w.Watches("r2"))
	}
}
