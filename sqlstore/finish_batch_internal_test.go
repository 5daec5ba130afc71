package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// A wave of cancels released together is written in one statement: its
// leader gathers the wave before it writes. One processor, so that the
// wave's goroutines run only when the leader yields (with more, they run
// beside it, and what one statement holds would depend on timing); the
// gather's bounds lengthened, so that a machine that stalls the test
// cannot cut it short. Without the gather, the leader writes its own
// cancel alone, the others arrive while its statement is under way, and
// they go in a second one. The statement announces the wave to the other
// processes in one notification, which a listener hands over in one call.
func TestAWaveOfCancelsIsOneStatement(t *testing.T) {
	ctx := t.Context()
	c := &StatementCounter{}
	s, err := OpenPostgres(ctx, pgtest.WithParams(pgtest.Schema(t), map[string]string{"pool_max_conns": "4"}), OpenCounter(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.finishes.gatherQuiet, s.finishes.gatherMax = 50*time.Millisecond, time.Minute
	heard := make(chan []string, 100)
	listening := make(chan struct{}, 1)
	lctx, stopListening := context.WithCancel(ctx)
	var listener sync.WaitGroup
	listener.Go(func() {
		_ = s.d.(*postgres).ListenCancelled(lctx, func(ids ...string) { heard <- ids },
			ListenOnListening(func() { listening <- struct{}{} }))
	})
	defer listener.Wait()
	defer stopListening()
	select {
	case <-listening:
	case <-time.After(10 * time.Second): // only keeps a broken test from hanging
		t.Fatal("the listener is not listening")
	}
	const wave = 50
	for i := range wave {
		if err := s.RunInsert(ctx, &agent.Run{ID: fmt.Sprint("r", i), Owner: "alice", Status: agent.StatusRunning, Request: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	won := make([]bool, wave)
	errs := make([]error, wave)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range wave {
		wg.Go(func() {
			<-start
			won[i], _, errs[i] = s.RunCancel(ctx, fmt.Sprint("r", i), agent.Actor{ID: "root", Admin: true}, true)
		})
	}
	before := c.Read()
	close(start)
	wg.Wait()
	if d := c.Read().Sub(before); d.Statements != 1 {
		t.Errorf("a wave of %d cancels released together took %d statements; want 1", wave, d.Statements)
	}
	var ids []string
	select {
	case ids = <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the wave's cancels were not announced")
	}
	slices.Sort(ids)
	var want []string
	for i := range wave {
		want = append(want, fmt.Sprint("r", i))
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("the first notification named %d runs (%q…); want the wave's %d in one", len(ids), ids[:min(3, len(ids))], wave)
	}
	for i := range wave {
		if !won[i] || errs[i] != nil {
			t.Errorf("RunCancel(r%d) = %v, %v; want won", i, won[i], errs[i])
		}
		run, err := s.RunGet(ctx, fmt.Sprint("r", i))
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != agent.StatusCancelled {
			t.Errorf("r%d is %s; want cancelled", i, run.Status)
		}
	}
}
