package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/jackc/pgx/v5"
)

// On PostgreSQL a step append and a move of the run's lease are ordered:
// the append holds the run row from its lease check to its commit, so a
// requeue (and the next claim) waits for an append under way, and the new
// owner, reading the steps once it holds the run, reads every step the old
// owner will ever have appended. The test holds the old owner's append
// between its check and its insert (by locking the run's step counter),
// moves the lease meanwhile, and checks that the steps the new owner read
// are the steps the run ends up with.
func TestPostgresStepAppendHoldsTheLeaseUntilItCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgSchema(t)
	s := openPGAt(t, dsn)
	t0 := time.Now()
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice", Status: agent.StatusRunning,
		LeaseOwner: "w1", LeaseExpires: t0.Add(time.Minute), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.StepAppend(ctx, "w1", &agent.Step{RunID: "r1", Kind: agent.StepModel}); err != nil {
		t.Fatal(err)
	}

	tx, blocker, monitor := holdLock(t, dsn, `SELECT pg_backend_pid() FROM step_seqs WHERE run_id = 'r1' FOR UPDATE`)
	appended := make(chan error, 1)
	go func() {
		appended <- s.StepAppend(ctx, "w1", &agent.Step{RunID: "r1", Kind: agent.StepTool, Tool: "late"})
	}()
	var w1 int // the old owner's append, past its lease check
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		pid, ok := blockedBy(t, monitor, blocker)
		if ok {
			w1 = pid
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the append never reached the step counter")
		}
	}

	// The lease lapses; the reaper requeues the run and w2 claims it and
	// reads its steps, as a segment does before it goes on.
	type claimed struct {
		steps []*agent.Step
		err   error
	}
	moved := make(chan claimed, 1)
	go func() {
		if ok, err := s.RunRequeueStale(ctx, "r1", t0.Add(2*time.Minute)); !ok || err != nil {
			moved <- claimed{err: err}
			return
		}
		if r, err := s.RunClaimID(ctx, "r1", "w2", t0.Add(time.Hour)); r == nil || err != nil {
			moved <- claimed{err: err}
			return
		}
		steps, err := s.StepList(ctx, "r1")
		moved <- claimed{steps, err}
	}()
	// Either the requeue waits for the append (it must), or it is done.
	var got claimed
	done := false
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		select {
		case got = <-moved:
			done = true
		default:
		}
		if _, waits := blockedBy(t, monitor, w1); done || waits {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the requeue neither finished nor waited for the append")
		}
	}
	if err := tx.Commit(ctx); err != nil { // the append goes on
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("the append that passed its lease check before the requeue = %v; want it to land", err)
	}
	if !done {
		got = <-moved
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	final, err := s.StepList(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.steps, final, func(a, b *agent.Step) bool { return a.Seq == b.Seq && a.Tool == b.Tool }) {
		t.Errorf("the new owner read %d steps when it claimed the run, but the old owner's append landed after: the run has %d",
			len(got.steps), len(final))
	}
}

// holdLock runs query, which locks rows and returns pg_backend_pid(), in a
// transaction on a connection of its own, and returns that transaction (to
// end it; it is rolled back at cleanup otherwise), the pid, and another
// connection to ask blockedBy who waits for the lock.
func holdLock(t *testing.T, dsn, query string) (pgx.Tx, int, *pgx.Conn) {
	t.Helper()
	ctx := t.Context()
	block, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = block.Close(context.Background()) })
	tx, err := block.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var blocker int
	if err := tx.QueryRow(ctx, query).Scan(&blocker); err != nil {
		t.Fatal(err)
	}
	monitor, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = monitor.Close(context.Background()) })
	return tx, blocker, monitor
}

// blockedBy returns the pid of a backend waiting for a lock that backend
// blocker holds, if there is one.
func blockedBy(t *testing.T, conn *pgx.Conn, blocker int) (int, bool) {
	t.Helper()
	var pid int
	err := conn.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) LIMIT 1`, blocker).Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return pid, true
}
