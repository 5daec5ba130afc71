package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// sqliteStore opens a store on a fresh SQLite file of t's, closed when t
// ends.
func sqliteStore(t *testing.T, opts ...OpenOption) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "andon.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitPending waits until n requests of g wait for a batch.
func waitPending[R request](b *groupCommit[oneGroup, R], n int) {
	for {
		if b.waiting(oneGroup{}) == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Step appends that arrive while another is being written share one
// transaction, and each keeps what it had alone: its own lease guard (a
// segment that does not hold its run appends nothing and is told
// ErrLeaseLost), its own seq, distinct and consecutive per run, in the
// order the appends came.
func TestConcurrentStepAppendsShareATransactionEachGuarded(t *testing.T) {
	ctx := t.Context()
	c := &StatementCounter{}
	s := sqliteStore(t, OpenCounter(c))
	for id, owner := range map[string]string{"r1": "w1", "r2": "w1", "r3": "w9"} {
		run := &agent.Run{ID: id, Owner: "alice", Request: []byte(`{"prompt":"p"}`), Status: agent.StatusRunning,
			LeaseOwner: owner, LeaseExpires: time.Now().Add(time.Hour)}
		if err := s.RunInsert(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	// Hold the writer, so that the first append waits at the gate
	// alone and every other waits for the next batch.
	gate := s.d.(*sqlite).gate
	if err := gate.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	runs := []string{"r1", "r2", "r3", "r1", "r2", "r3", "r1", "r2", "r3", "r1", "r1", "r2"}
	steps := make([]*agent.Step, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, run := range runs {
		steps[i] = &agent.Step{RunID: run, At: time.Now(), Kind: agent.StepTool, Tool: fmt.Sprint("call", i)}
		wg.Go(func() { errs[i] = s.StepAppend(ctx, "w1", steps[i]) })
		if i == 0 {
			waitQueued(gate, 1) // the first: alone, at the gate
		} else {
			waitPending(s.steps, i) // the others, in order
		}
	}
	before := c.Read()
	gate.release()
	wg.Wait()
	used := c.Read().Sub(before)
	if used.Transactions != 1 {
		t.Errorf("%d transactions for %d appends that waited together; want 1", used.Transactions, len(runs)-1)
	}
	next := map[string]int{}
	for i, run := range runs {
		if run == "r3" { // held by w9
			if !errors.Is(errs[i], agent.ErrLeaseLost) {
				t.Errorf("append %d to a run w1 does not hold = %v; want ErrLeaseLost", i, errs[i])
			}
			continue
		}
		next[run]++
		if errs[i] != nil || steps[i].Seq != next[run] {
			t.Errorf("append %d to %s = seq %d, %v; want seq %d", i, run, steps[i].Seq, errs[i], next[run])
		}
	}
	for run, want := range map[string]int{"r1": 5, "r2": 4, "r3": 0} {
		got, err := s.StepList(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int
		for _, st := range got {
			seqs = append(seqs, st.Seq)
		}
		if len(got) != want || !slices.IsSorted(seqs) || (want > 0 && seqs[want-1] != want) {
			t.Errorf("%s has steps %v; want 1…%d", run, seqs, want)
		}
	}
}

// An append whose context ends while it still waits for its batch leaves
// with the context's error and writes nothing; the others go on.
func TestAStepAppendThatGivesUpWaitingWritesNothing(t *testing.T) {
	ctx := t.Context()
	s := sqliteStore(t)
	run := &agent.Run{ID: "r1", Owner: "alice", Request: []byte(`{"prompt":"p"}`), Status: agent.StatusRunning,
		LeaseOwner: "w1", LeaseExpires: time.Now().Add(time.Hour)}
	if err := s.RunInsert(ctx, run); err != nil {
		t.Fatal(err)
	}
	gate := s.d.(*sqlite).gate
	if err := gate.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	first := &agent.Step{RunID: "r1", Kind: agent.StepModel, Text: "first"}
	var firstErr error
	wg.Go(func() { firstErr = s.StepAppend(ctx, "w1", first) })
	waitQueued(gate, 1)
	quit, giveUp := context.WithCancel(ctx)
	var quitErr error
	wg.Go(func() {
		quitErr = s.StepAppend(quit, "w1", &agent.Step{RunID: "r1", Kind: agent.StepModel, Text: "gave up"})
	})
	waitPending(s.steps, 1)
	giveUp()
	waitPending(s.steps, 0)
	gate.release()
	wg.Wait()
	if firstErr != nil || first.Seq != 1 {
		t.Fatalf("the first append = seq %d, %v; want 1, nil", first.Seq, firstErr)
	}
	if !errors.Is(quitErr, context.Canceled) {
		t.Fatalf("the append that gave up = %v; want context.Canceled", quitErr)
	}
	if got, _ := s.StepList(ctx, "r1"); len(got) != 1 {
		t.Fatalf("the run has %d steps; want 1", len(got))
	}
}
