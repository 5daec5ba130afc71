package sqlstore_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/storetest"
)

func TestRunsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRuns(t, func(t *testing.T) agent.Store { return openStore(t) })
}

// Two Stores on one file stand in for two processes: each has its own
// connection pool, so only SQLite's file locking keeps them apart.
func TestTwoStoresOnOneFileClaimEachRunOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "andon.db")
	var stores []*sqlstore.Store
	for range 2 {
		s, err := sqlstore.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	const runs = 40
	for i := range runs {
		if err := stores[0].RunInsert(ctx, &agent.Run{ID: fmt.Sprintf("r%02d", i), Owner: "alice",
			CreatedAt: time.Unix(1, int64(i)).UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string]string{}
	)
	for w := range 8 {
		s := stores[w%2]
		owner := fmt.Sprintf("process%d:worker%d", w%2, w)
		wg.Go(func() {
			for {
				r, err := s.RunClaim(ctx, owner, time.Now().Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				if r == nil {
					return
				}
				mu.Lock()
				if prev, dup := claimed[r.ID]; dup {
					t.Errorf("%s claimed by %s and %s", r.ID, prev, owner)
				}
				claimed[r.ID] = owner
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != runs {
		t.Fatalf("%d of %d runs claimed", len(claimed), runs)
	}
}

// RunStatuses sends its ids as one parameter, so SQLite's limit on bound
// parameters (32766 by default) does not apply and the watcher's poll stays one query.
func TestRunStatusesTakesAnyNumberOfIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"r1"}
	for i := range 33_000 {
		ids = append(ids, fmt.Sprintf("gone-%d", i))
	}
	got, err := s.RunStatuses(ctx, ids)
	if err != nil || len(got) != 1 || got["r1"] != agent.StatusQueued {
		t.Fatalf("RunStatuses(%d ids) = %v, %v; want r1 queued", len(ids), got, err)
	}
}
