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

// runWatcher runs w until the test ends.
func runWatcher(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
}

// heldWatcher is a watcher on held statuses, already holding its reads,
// whose bookkeeping waits for nothing but the end of the cancels under
// way, watching a call of each of runs, and running until the test ends.
func heldWatcher(t *testing.T, runs ...string) (*heldStatuses, *Watcher) {
	h := &heldStatuses{held: make(chan struct{}), entered: make(chan []string), release: make(chan map[string]Status)}
	w := NewWatcher(h, time.Hour, nil)
	w.signalWait = time.Hour // longer than the test: only the reads' return ends the wait
	for _, id := range runs {
		_, stop := w.watchCall(context.Background(), id)
		t.Cleanup(stop)
	}
	close(h.held)
	runWatcher(t, w)
	return h, w
}

// A hint is a cancel made in another process arriving here, so from the
// hint until the watcher's read of the row has returned, the bookkeeping
// of cancelled runs waits (signals before bookkeeping, signals.go), as it
// does for a cancel this process makes; once the read has returned and
// found nothing cancelled, it waits no more.
func TestBookkeepingWaitsForAHintedRead(t *testing.T) {
	t.Parallel()
	h, w := heldWatcher(t, "r1")

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

// With two reads of hints under way, the one that returns first does not
// end the cancel under way: the other may yet find its runs cancelled.
func TestBookkeepingWaitsForEveryHintedRead(t *testing.T) {
	t.Parallel()
	h, w := heldWatcher(t, "r1", "r2")

	w.Hint("r1")
	<-h.entered
	w.Hint("r2")
	<-h.entered
	h.release <- map[string]Status{}     // whichever it is, it found nothing cancelled
	hang := time.After(10 * time.Second) // only keeps a broken test from hanging
	for readers := 2; readers == 2; {
		select {
		case <-hang:
			t.Fatal("the released read's reader did not return")
		case <-time.After(time.Millisecond):
		}
		w.mu.Lock()
		readers = w.readers
		w.mu.Unlock()
	}
	w.mu.Lock()
	underWay := w.signals.quiet != nil
	w.mu.Unlock()
	if !underWay {
		t.Error("the first read to return ended the cancel under way while the other read was held")
	}
	h.release <- map[string]Status{}
	for underWay {
		select {
		case <-hang:
			t.Fatal("the cancel under way did not end once both reads returned")
		case <-time.After(time.Millisecond):
		}
		w.mu.Lock()
		underWay = w.signals.quiet != nil
		w.mu.Unlock()
	}
}

// Hints that a poll read before any read of hints began end the cancel
// under way all the same, once the watcher finds nothing left to read.
func TestAPollThatReadTheHintsEndsTheirCancelUnderWay(t *testing.T) {
	t.Parallel()
	w := NewWatcher(noStatuses{}, time.Hour, nil)
	_, stop := w.watchCall(context.Background(), "r1")
	defer stop()
	w.Hint("r1") // Run is not running yet: the hint waits
	w.Poll(context.Background())
	runWatcher(t, w)
	hang := time.After(10 * time.Second) // only keeps a broken test from hanging
	for {
		w.mu.Lock()
		underWay := w.signals.quiet != nil
		w.mu.Unlock()
		if !underWay {
			return
		}
		select {
		case <-hang:
			t.Fatal("the cancel under way that the hint counted as did not end after a poll read it")
		case <-time.After(time.Millisecond):
		}
	}
}
