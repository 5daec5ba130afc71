package agent

import (
	"context"
	"testing"
	"time"
)

// heldStatuses is a StatusReader whose reads, once held is set, wait for
// the test: each announces its ids on entered and returns what release
// sends.
type heldStatuses struct {
	held    chan struct{} // closed: reads wait for the test
	entered chan []string
	release chan map[string]Status
}

func (h *heldStatuses) RunStatuses(ctx context.Context, ids []string) (map[string]Status, error) {
	select {
	case <-h.held:
	default:
		return map[string]Status{}, nil
	}
	select {
	case h.entered <- ids:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case st := <-h.release:
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A hint is a cancel made in another process arriving here, so from the
// hint until the watcher's read of the row has returned, the bookkeeping
// of cancelled runs waits (signals before bookkeeping, signals.go), as it
// does for a cancel this process makes; once the read has returned and
// found nothing cancelled, it waits no more.
func TestBookkeepingWaitsForAHintedRead(t *testing.T) {
	t.Parallel()
	h := &heldStatuses{held: make(chan struct{}), entered: make(chan []string), release: make(chan map[string]Status)}
	w := NewWatcher(h, time.Hour, nil)
	w.signalWait = time.Hour // longer than the test: only the read's return ends the wait
	_, stop := w.watchCall(context.Background(), "r1")
	defer stop()
	close(h.held)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	w.Hint("r1")
	if ids := <-h.entered; len(ids) != 1 || ids[0] != "r1" {
		t.Fatalf("the hinted read asked about %v, want [r1]", ids)
	}
	awaited := make(chan struct{})
	go func() { defer close(awaited); w.awaitSignals(context.Background()) }()
	for waiting := 0; waiting == 0; {
		select {
		case <-awaited:
			h.release <- map[string]Status{"r1": StatusRunning}
			t.Fatal("bookkeeping went ahead while a hinted read was under way")
		case <-time.After(time.Millisecond):
		}
		w.mu.Lock()
		waiting = w.signals.waiting
		w.mu.Unlock()
	}
	h.release <- map[string]Status{"r1": StatusRunning} // a stray hint
	select {
	case <-awaited:
	case <-time.After(10 * time.Second): // only keeps a broken test from hanging
		t.Fatal("bookkeeping still waits after the hinted read returned")
	}
}
