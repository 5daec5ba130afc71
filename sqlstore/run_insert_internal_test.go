package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// jobOfRun reads the River job that run id's row names and returns the
// run its arguments carry ("" if the row names none).
func jobOfRun(t *testing.T, s *Store, id string) string {
	t.Helper()
	ctx := t.Context()
	var jobID *int64
	if err := s.d.queryRow(ctx, `SELECT job_id FROM runs WHERE id = ?`, id).Scan(&jobID); err != nil {
		t.Fatalf("reading run %s's job: %v", id, err)
	}
	if jobID == nil {
		return ""
	}
	col := "args::text"
	if _, ok := s.d.(*sqlite); ok {
		col = "json(args)" // riversqlite stores SQLite's binary JSONB
	}
	var args []byte
	if err := s.d.queryRow(ctx, `SELECT `+col+` FROM river_job WHERE id = ?`, *jobID).Scan(&args); err != nil {
		t.Fatalf("reading job %d of run %s: %v", *jobID, id, err)
	}
	var job runJob
	if err := json.Unmarshal(args, &job); err != nil {
		t.Fatalf("job %d of run %s has args %q: %v", *jobID, id, args, err)
	}
	return job.RunID
}

// A batch of run inserts is one transaction, each queued run's row names
// the River job of that run (not another's of the batch), a run born
// running gets no job, and an insert that fails (an id that exists) fails
// alone: the others of its batch are written.
func TestARunInsertBatchIsOneTransactionAndEachFailsAlone(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := t.Context()
			dsn := filepath.Join(t.TempDir(), "andon.db")
			if backend == "postgres" {
				dsn = pgtest.Schema(t)
			}
			c := &StatementCounter{}
			s, err := Open(ctx, dsn, OpenCounter(c))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.RunInsert(ctx, &agent.Run{ID: "old", Owner: "alice"}); err != nil {
				t.Fatal(err)
			}
			batch := func(ids ...string) []*insertReq {
				var b []*insertReq
				for _, id := range ids {
					run := &agent.Run{ID: id, Owner: "alice", Status: agent.StatusQueued, CreatedAt: time.Now()}
					if id == "born-running" {
						run.Status, run.LeaseOwner, run.LeaseExpires = agent.StatusRunning, "w1", time.Now().Add(time.Hour)
					}
					b = append(b, &insertReq{waiter: newWaiter(), run: run})
				}
				return b
			}

			ok := batch("a", "b", "born-running", "c")
			before := c.Read()
			s.writeRunInserts(ctx, ok)
			if used := c.Read().Sub(before); used.Transactions != 1 {
				t.Errorf("a batch of %d inserts took %d transactions; want 1", len(ok), used.Transactions)
			}
			for _, r := range ok {
				if r.err != nil {
					t.Errorf("insert of %s = %v", r.run.ID, r.err)
				}
			}
			for id, want := range map[string]string{"a": "a", "b": "b", "c": "c", "born-running": "", "old": "old"} {
				if got := jobOfRun(t, s, id); got != want {
					t.Errorf("run %s's row names the job of run %q; want %q", id, got, want)
				}
			}

			mixed := batch("d", "old", "e", "d")
			s.writeRunInserts(ctx, mixed)
			for i, wantErr := range []bool{false, true, false, true} {
				if r := mixed[i]; (r.err != nil) != wantErr {
					t.Errorf("insert %d (%s) = %v; want an error: %v", i, r.run.ID, r.err, wantErr)
				}
			}
			for _, id := range []string{"d", "e", "old"} {
				if got := jobOfRun(t, s, id); got != id {
					t.Errorf("after the batch with a failing insert, run %s names the job of run %q", id, got)
				}
			}
			if run, err := s.RunGet(ctx, "old"); err != nil || run.Status != agent.StatusQueued {
				t.Errorf("run old after a second insert of its id: %+v, %v; want it as it was", run, err)
			}
		})
	}
}

// Run inserts that arrive while another is being written share the next
// transaction (on SQLite, held up here at the one writer's gate), and each
// answers for itself.
func TestConcurrentRunInsertsShareATransaction(t *testing.T) {
	ctx := t.Context()
	c := &StatementCounter{}
	s := sqliteStore(t, OpenCounter(c))
	gate := s.d.(*sqlite).gate
	if err := gate.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	ids := []string{"r0", "r1", "r2", "r3", "r2", "r4"}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = s.RunInsert(ctx, &agent.Run{ID: id, Owner: "alice"}) })
		if i == 0 {
			waitQueued(gate, 1) // the first: alone, at the gate
		} else {
			waitPending(s.inserts, i) // the others, together
		}
	}
	before := c.Read()
	gate.release()
	wg.Wait()
	used := c.Read().Sub(before)
	// The leader's transaction, the batch's, which fails on the second r2,
	// and then each of the five alone.
	if want := uint64(1 + 1 + len(ids) - 1); used.Transactions != want {
		t.Errorf("%d transactions for one insert and %d that waited together, one failing; want %d",
			used.Transactions, len(ids)-1, want)
	}
	for i, id := range ids {
		if wantErr := i == 4; (errs[i] != nil) != wantErr {
			t.Errorf("insert %d (%s) = %v; want an error: %v", i, id, errs[i], wantErr)
		}
	}
	for _, id := range []string{"r0", "r1", "r2", "r3", "r4"} {
		if got := jobOfRun(t, s, id); got != id {
			t.Errorf("run %s names the job of run %q", id, got)
		}
	}

	// Without a failing insert, the batch is one transaction.
	if err := gate.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		wg.Go(func() {
			if err := s.RunInsert(ctx, &agent.Run{ID: fmt.Sprint("s", i), Owner: "alice"}); err != nil {
				t.Errorf("insert s%d: %v", i, err)
			}
		})
		if i == 0 {
			waitQueued(gate, 1)
		} else {
			waitPending(s.inserts, i)
		}
	}
	before = c.Read()
	gate.release()
	wg.Wait()
	if used := c.Read().Sub(before); used.Transactions != 2 {
		t.Errorf("%d transactions for one insert and four that waited together; want 2", used.Transactions)
	}

	// An insert whose context has ended writes nothing: the group's
	// leader writes on a context of its own, so this is checked first.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.RunInsert(ended, &agent.Run{ID: "late", Owner: "alice"}); !errors.Is(err, context.Canceled) {
		t.Errorf("an insert on an ended context = %v; want context.Canceled", err)
	}
	if _, err := s.RunGet(ctx, "late"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("run late after an insert on an ended context: %v; want ErrNotFound", err)
	}
}
