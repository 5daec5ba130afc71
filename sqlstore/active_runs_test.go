package sqlstore_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// No transition of a run changes a column that an index of runs names:
// on PostgreSQL every UPDATE of a run is then heap-only (HOT), writing no
// index entry, which is what makes a storm's cancel statement cheap
// (migrations/010_active_runs.sql); on SQLite it writes no index of runs.
// A lookup by status belongs in active_runs.
func TestRunTransitionsWriteNoIndexedColumn(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		got := open(t).IndexedRunColumns(t)
		slices.Sort(got)
		if want := []string{"created_at", "id", "owner"}; !slices.Equal(got, want) {
			t.Errorf("the indexes of runs name %q; want only %q, the columns no transition writes", got, want)
		}
	})
}

// Claims and cancels of the same queued runs, at once, from two stores (two
// processes): every run ends claimed or cancelled (or both), and no
// statement fails. On PostgreSQL a claim locks its candidate's run row and
// a cancel locks the run row first too (then its active_runs row, by
// trigger); a claim that locked the active_runs row instead would deadlock
// with a cancel of the same run (40P01, after a second).
func TestClaimsAndCancelsOfTheSameRuns(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		claimer, canceller := open(t), open(t)
		ctx := t.Context()
		const runs = 300
		for i := range runs {
			if err := claimer.RunInsert(ctx, queuedRun(fmt.Sprintf("r%03d", i))); err != nil {
				t.Fatal(err)
			}
		}
		var claimed sync.Map
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { // claims, oldest first, until none is left
				for {
					run, err := claimer.RunClaim(ctx, "w", time.Now().Add(time.Hour))
					if err != nil {
						t.Errorf("claiming: %v", err)
						return
					}
					if run == nil {
						return
					}
					claimed.Store(run.ID, true)
				}
			})
			wg.Go(func() { // cancels, oldest first: where the claims are
				for i := range runs {
					id := fmt.Sprintf("r%03d", i)
					if _, _, err := canceller.RunCancel(ctx, id, agent.Actor{Admin: true}, false); err != nil {
						t.Errorf("cancelling %s: %v", id, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for i := range runs {
			id := fmt.Sprintf("r%03d", i)
			run, err := claimer.RunGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			_, c := claimed.Load(id)
			if run.Status != agent.StatusCancelled && !c {
				t.Errorf("%s is %s, neither claimed nor cancelled", id, run.Status)
			}
		}
		if diff := claimer.ActiveRunsDiffer(t); diff != "" {
			t.Errorf("active_runs differs from runs: %s", diff)
		}
	})
}
