package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/andonhq/andon/agent"
)

// The task handles of tool calls (agent.TaskStore): the tool_tasks table
// (migration 008), one row per call that became an MCP task, named by the
// run, the model step that asked for the call and its place in it.

var _ agent.TaskStore = (*Store)(nil)

const taskColumns = `run_id, step_seq, call_index, tool, args_digest, server, task_id, revision,
	status, status_message, created_at, updated_at, cancel_at, cancel_outcome, settled`

// taskOpen is the SQL list of the statuses of a task still at work.
const taskOpen = `('working', 'input_required')`

// maxTaskMessage bounds the status message kept: it is the server's text,
// shown to operators, not a record of the task.
const maxTaskMessage = 1 << 10

// TaskRecord implements [agent.TaskStore]. It stores the handle only for a
// running run that owner holds (the lease guard, in the same statement),
// and only if the call has none yet.
func (s *Store) TaskRecord(ctx context.Context, owner string, t *agent.Task) (bool, error) {
	what := "recording the task of a call of run " + t.RunID
	if owner == "" {
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	if t.Status == "" {
		t.Status = agent.TaskWorking
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	ok, err := changedOne(s.d.exec(ctx, `INSERT INTO tool_tasks (`+taskColumns+`)
		SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs
		WHERE id = ? AND status = 'running' AND lease_owner = ? AND lease_owner <> ''
		ON CONFLICT (run_id, step_seq, call_index) DO NOTHING`,
		t.Step, t.Call, t.Tool, t.ArgsDigest, t.Server, t.ID, t.Revision,
		string(t.Status), cutMessage(t.StatusMessage), nanos(t.CreatedAt), nanos(t.UpdatedAt),
		nanos(t.CancelAt), string(t.CancelOutcome), t.Settled,
		t.RunID, owner))
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return ok, nil
}

// TaskGet implements [agent.TaskStore].
func (s *Store) TaskGet(ctx context.Context, ref agent.CallRef) (*agent.Task, error) {
	t, err := scanTask(s.d.queryRow(ctx, `SELECT `+taskColumns+` FROM tool_tasks
		WHERE run_id = ? AND step_seq = ? AND call_index = ?`, ref.RunID, ref.Step, ref.Call))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the task of a call of run %s: %w", ref.RunID, err)
	}
	return t, nil
}

// TaskList implements [agent.TaskStore].
func (s *Store) TaskList(ctx context.Context, runID string) ([]*agent.Task, error) {
	rs, err := s.d.query(ctx, `SELECT `+taskColumns+` FROM tool_tasks WHERE run_id = ? ORDER BY step_seq, call_index`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the tasks of run %s: %w", runID, err)
	}
	defer rs.Close()
	return collect(rs, "listing the tasks of run "+runID, scanTask)
}

// TaskSetStatus implements [agent.TaskStore]: the guard is that the stored
// status is still open.
func (s *Store) TaskSetStatus(ctx context.Context, ref agent.CallRef, st agent.TaskState, at time.Time) (bool, error) {
	return s.transition(ctx, "recording the status of a task of run "+ref.RunID, `UPDATE tool_tasks
		SET status = ?, status_message = ?, updated_at = ?
		WHERE run_id = ? AND step_seq = ? AND call_index = ? AND status IN `+taskOpen,
		string(st.Status), cutMessage(st.Message), nanos(at), ref.RunID, ref.Step, ref.Call)
}

// TaskSetCancel implements [agent.TaskStore]. An acknowledged cancel stays
// acknowledged: a later tasks/cancel that the server refuses (the task is
// cancelled already) does not hide that the first one reached it.
func (s *Store) TaskSetCancel(ctx context.Context, ref agent.CallRef, outcome agent.TaskCancelOutcome, at time.Time) error {
	_, err := s.d.exec(ctx, `UPDATE tool_tasks SET cancel_at = ?, cancel_outcome = ?
		WHERE run_id = ? AND step_seq = ? AND call_index = ? AND cancel_outcome <> 'acknowledged'`,
		nanos(at), string(outcome), ref.RunID, ref.Step, ref.Call)
	if err != nil {
		return fmt.Errorf("sqlstore: recording a tasks/cancel for run %s: %w", ref.RunID, err)
	}
	return nil
}

// TaskSettle implements [agent.TaskStore]: a terminal status given
// replaces only an open one.
func (s *Store) TaskSettle(ctx context.Context, ref agent.CallRef, final agent.TaskStatus) error {
	_, err := s.d.exec(ctx, `UPDATE tool_tasks
		SET settled = ?, status = CASE WHEN ? <> '' AND status IN `+taskOpen+` THEN ? ELSE status END
		WHERE run_id = ? AND step_seq = ? AND call_index = ?`,
		true, string(final), string(final), ref.RunID, ref.Step, ref.Call)
	if err != nil {
		return fmt.Errorf("sqlstore: settling the task of a call of run %s: %w", ref.RunID, err)
	}
	return nil
}

// TasksToCancel implements [agent.TaskStore]: open tasks with no cancel
// sent, or one that found the server unreachable, of runs that finished
// before before. A cancel the server refused is not sent again: the server
// does not know the task, or it is over.
func (s *Store) TasksToCancel(ctx context.Context, before time.Time) ([]*agent.Task, error) {
	rs, err := s.d.query(ctx, `SELECT `+prefixed("t.", taskColumns)+` FROM tool_tasks t JOIN runs r ON r.id = t.run_id
		WHERE t.status IN `+taskOpen+` AND t.cancel_outcome IN ('', 'unreachable')
			AND r.status IN `+terminal+` AND r.finished_at < ?
		ORDER BY r.finished_at, t.run_id, t.step_seq, t.call_index`, nanos(before))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the tasks to cancel: %w", err)
	}
	defer rs.Close()
	return collect(rs, "listing the tasks to cancel", scanTask)
}

// RunRequeueStaleTask implements [agent.TaskStore]: RunRequeueStale that
// keeps the write fence, for a run with a task not settled, and inserts the
// run's new job in the same transaction.
func (s *Store) RunRequeueStaleTask(ctx context.Context, id string, now time.Time) (bool, error) {
	return s.requeue(ctx, "requeueing stale run "+id+" mid-task", id, `UPDATE runs
		SET status = 'queued', lease_owner = '', lease_expires = 0
		WHERE id = ? AND status = 'running' AND lease_expires <> 0 AND lease_expires < ? AND home = ''
			AND EXISTS (SELECT 1 FROM tool_tasks WHERE tool_tasks.run_id = runs.id AND NOT tool_tasks.settled)`,
		id, now.UnixNano())
}

func scanTask(sc scanner) (*agent.Task, error) {
	var t agent.Task
	var status, outcome string
	var created, updated, cancelAt int64
	if err := sc.Scan(&t.RunID, &t.Step, &t.Call, &t.Tool, &t.ArgsDigest, &t.Server, &t.ID, &t.Revision,
		&status, &t.StatusMessage, &created, &updated, &cancelAt, &outcome, &t.Settled); err != nil {
		return nil, err
	}
	t.Status, t.CancelOutcome = agent.TaskStatus(status), agent.TaskCancelOutcome(outcome)
	t.CreatedAt, t.UpdatedAt, t.CancelAt = fromNanos(created), fromNanos(updated), fromNanos(cancelAt)
	return &t, nil
}

// prefixed qualifies each of a list of columns with prefix.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// cutMessage bounds a server's status message, on a character boundary.
func cutMessage(m string) string {
	if len(m) <= maxTaskMessage {
		return m
	}
	cut := maxTaskMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}
