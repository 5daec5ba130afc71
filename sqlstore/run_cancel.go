package sqlstore

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/agent"
)

var _ agent.RunCanceller = (*Store)(nil)

// An operator's cancel in one statement. Before, a cancel read the run (to
// authorise it and, after the write, to know whether its tasks' holder was
// alive), wrote it, read its tasks and, on PostgreSQL, sent a NOTIFY of its
// own: four trips to the database, each queued behind the work of every
// other run in flight, and on another machine each a network round trip.
// RunCancel puts the authorisation and "this run has no task" into the
// guarded UPDATE's WHERE clause, and on PostgreSQL the NOTIFY into the same
// statement, so that a cancel that wins is exactly one statement. It goes
// through the group commit (finish_batch.go): concurrent cancels by the
// same actor share a statement.

// RunCancel implements [agent.RunCanceller]. announced is true only on
// PostgreSQL, when announce asked for it: the statement's pg_notify, which
// names the runs it cancelled (postgres_notify.go), delivered at its commit.
func (s *Store) RunCancel(ctx context.Context, id string, by agent.Actor, announce bool) (won, announced bool, err error) {
	if !by.Admin && by.ID == "" {
		return false, false, nil // nobody's run: an empty owner holds nothing
	}
	key := finishKey{to: agent.StatusCancelled, reason: agent.ReasonCancelled, cancel: true,
		notify: announce && s.d.canAnnounce(), trace: agent.TraceParent(ctx)}
	if !by.Admin {
		key.owner = by.ID
	}
	won, err = s.finishBatched(ctx, key, id)
	if err != nil {
		return false, false, fmt.Errorf("sqlstore: cancelling run %s: %w", id, err)
	}
	return won, won && key.notify, nil
}

// cancelGuard adds RunCancel's guard to the WHERE clause of an UPDATE of
// runs, and its arguments: the actor's ownership (owner empty: an admin,
// any run) and no task recorded for the run. A task needs the cancel that
// reads it (agent's cancelTasksOf); the tasks' primary key starts with the
// run, so the check is one index probe per run.
func cancelGuard(stmt string, args []any, owner string) (string, []any) {
	if owner != "" {
		stmt += ` AND owner = ?`
		args = append(args, owner)
	}
	stmt += ` AND NOT EXISTS (SELECT 1 FROM tool_tasks WHERE tool_tasks.run_id = runs.id)`
	return stmt, args
}
