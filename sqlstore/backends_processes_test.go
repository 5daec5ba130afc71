package sqlstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/sqlstore"
)

// Tests where stores on one database stand for processes (or machines):
// each store has its own connections, so only the database keeps them
// apart. The shared suites use one store per test.

const processes = 3

func openProcesses(t *testing.T, open func(t *testing.T) *sqlstore.Store) []*sqlstore.Store {
	t.Helper()
	stores := make([]*sqlstore.Store, processes)
	for i := range stores {
		stores[i] = open(t)
	}
	return stores
}

func TestProcessesClaimEachRunOnce(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := t.Context()
		stores := openProcesses(t, open)
		const runs = 60
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
		for w := range 3 * processes {
			s := stores[w%processes]
			owner := fmt.Sprintf("process%d:worker%d", w%processes, w)
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
	})
}

func TestProcessesNumberStepsOfOneRunWithoutGaps(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := t.Context()
		stores := openProcesses(t, open)
		if err := stores[0].RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice", Status: agent.StatusRunning, LeaseOwner: "w", LeaseExpires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		const each = 20
		var wg sync.WaitGroup
		for _, s := range stores {
			wg.Go(func() {
				for range each {
					if err := s.StepAppend(ctx, "w", &agent.Step{RunID: "r1", Kind: agent.StepModel}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		steps, err := stores[0].StepList(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != processes*each {
			t.Fatalf("%d steps, want %d", len(steps), processes*each)
		}
		for i, st := range steps {
			if st.Seq != i+1 {
				t.Fatalf("step %d has seq %d; want 1…n without gaps", i, st.Seq)
			}
		}
	})
}

func TestProcessesChainAuditRows(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := t.Context()
		stores := openProcesses(t, open)
		link := func(prev []byte, seq int64) []byte {
			sum := sha256.Sum256(binary.BigEndian.AppendUint64(append([]byte(nil), prev...), uint64(seq)))
			return sum[:]
		}
		next := func(hs audit.Heads) (audit.Row, audit.Head, error) {
			h := hs.Head
			r := audit.Row{Seq: h.Seq + 1, Entry: audit.Entry{Time: time.Now(), Action: audit.ActionHTTPCall}}
			r.MAC = link(h.MAC, r.Seq)
			return r, audit.Head{Seq: r.Seq, First: 1, Length: r.Seq, MAC: r.MAC, Seal: r.MAC}, nil
		}
		const each = 20
		var wg sync.WaitGroup
		for _, s := range stores {
			for range 2 {
				wg.Go(func() {
					for range each {
						if err := s.AuditAppend(ctx, next); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		rows, err := stores[0].AuditRows(ctx, audit.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2*processes*each {
			t.Fatalf("%d audit rows, want %d", len(rows), 2*processes*each)
		}
		var prev []byte
		for i, r := range rows {
			if r.Seq != int64(i+1) || !bytes.Equal(r.MAC, link(prev, r.Seq)) {
				t.Fatalf("row %d is not chained to row %d: two appends saw the same head", r.Seq, i)
			}
			prev = r.MAC
		}
	})
}
