package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/andonhq/andon/audit"
)

// Cancelling a task from anywhere. The process holding a call sends
// tasks/cancel itself the moment the run's context is cancelled (its MCP
// client does, and reports the answer through [TaskTrace].Cancelled). When
// no live process holds the call — its worker died, its lease lapsed, the
// run went back to the queue mid-task — the process that records the
// cancel sends it, with the persisted id; and the reaper, in every
// process, sends it for any task of a finished run still open on its
// server once the holder has had a lease's time to do it.

// taskCancelTimeout bounds one tasks/cancel sent with a persisted id:
// connecting to the server and its answer.
const taskCancelTimeout = 10 * time.Second

// Who sent a tasks/cancel, in its audit row.
const (
	byHolder = "by the worker holding the call"
	byReaper = "by the reaper"
)

// CancelReport says what a cancel did about the run's tasks: one entry per
// task still open on its server when the run was cancelled.
type CancelReport struct {
	Tasks []TaskCancelReport
}

// TaskCancelReport is what became of one task when its run was cancelled.
type TaskCancelReport struct {
	// Task is the handle, as it was before the cancel.
	Task *Task
	// ByHolder: a live worker holds the call, and its MCP client sends
	// tasks/cancel; its answer is recorded on the task (and in the audit
	// log) when it comes. Outcome is then empty, unless the answer was
	// recorded already.
	ByHolder bool
	// Outcome is what the server said to the tasks/cancel this process
	// sent, when no live worker held the call.
	Outcome TaskCancelOutcome
}

// cancelTasksOf sends tasks/cancel for the open tasks of run, cancelled
// by actor since start, whose call no live worker holds, and reports on
// every task that was open: also one whose holder has cancelled it
// meanwhile (the holder heard of the cancel before this reads the tasks),
// with the answer its server gave. run is the row as it was before the
// cancel: a lease that had not lapsed then is a live holder.
func (rt *Runtime) cancelTasksOf(ctx context.Context, run *Run, actor Actor, start time.Time) *CancelReport {
	report := &CancelReport{}
	if rt.tasks == nil {
		return report
	}
	tasks, err := rt.tasks.TaskList(ctx, run.ID)
	if err != nil {
		rt.logger.Warn("agent: listing a cancelled run's tasks failed; the reaper will cancel them", "run", run.ID, "error", err)
		return report
	}
	held := run.Status == StatusRunning && run.LeaseOwner != "" && run.LeaseExpires.After(rt.cfg.Now())
	for _, t := range tasks {
		cancelledSince := !t.CancelAt.IsZero() && !t.CancelAt.Before(start)
		if t.Status.Terminal() && !cancelledSince {
			continue // over before the cancel: nothing to stop
		}
		r := TaskCancelReport{Task: t, ByHolder: held}
		switch {
		case held && cancelledSince:
			r.Outcome = t.CancelOutcome
		case !held:
			r.Outcome = rt.cancelTask(ctx, t, "by "+actor.ID)
		}
		report.Tasks = append(report.Tasks, r)
	}
	return report
}

// cancelTask sends tasks/cancel for t with its persisted id, bounded, and
// records the server's answer.
func (rt *Runtime) cancelTask(ctx context.Context, t *Task, by string) TaskCancelOutcome {
	outcome := TaskCancelUnreachable
	var st *TaskState
	if rt.taskTools == nil {
		rt.logger.Warn("agent: no tools reach the servers of tasks: a task is left to its server", "run", t.RunID, "task", t.ID)
	} else {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
		var err error
		outcome, st, err = rt.taskTools.CancelTask(cctx, t)
		cancel()
		if err != nil {
			rt.logger.Warn("agent: tasks/cancel failed", "run", t.RunID, "server", t.Server, "task", t.ID, "outcome", string(outcome), "error", err)
		}
		if outcome == "" {
			outcome = TaskCancelUnreachable
		}
	}
	rt.recordTaskCancel(ctx, t.CallRef, outcome, st, by)
	return outcome
}

// recordTaskCancel records what a server said to a tasks/cancel of the
// call's task: on the task, and as a task_cancel audit row.
func (rt *Runtime) recordTaskCancel(ctx context.Context, ref CallRef, outcome TaskCancelOutcome, st *TaskState, by string) {
	if rt.tasks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskBookkeeping)
	defer cancel()
	now := rt.cfg.Now()
	if err := rt.tasks.TaskSetCancel(ctx, ref, outcome, now); err != nil {
		rt.logger.Warn("agent: recording a tasks/cancel failed", "run", ref.RunID, "error", err)
	}
	if st != nil && st.Status != "" {
		if _, err := rt.tasks.TaskSetStatus(ctx, ref, *st, now); err != nil {
			rt.logger.Warn("agent: recording a task's status failed", "run", ref.RunID, "error", err)
		}
	}
	t, err := rt.tasks.TaskGet(ctx, ref)
	if err != nil || t == nil {
		t = &Task{CallRef: ref}
	}
	if err := rt.audit(ctx, auditTaskCancel(t, outcome, by, now)); err != nil {
		rt.logger.Warn("agent: auditing a tasks/cancel failed", "run", ref.RunID, "error", err)
	}
	rt.logger.Info("agent: tasks/cancel sent", "run", ref.RunID, "server", t.Server, "task", t.ID, "outcome", string(outcome), "by", by)
}

// auditTaskCancel is the audit row of one tasks/cancel.
func auditTaskCancel(t *Task, outcome TaskCancelOutcome, by string, at time.Time) audit.Entry {
	return audit.Entry{Time: at, Action: audit.ActionTaskCancel, RunID: t.RunID, Purpose: by, Host: t.Server,
		Path: fmt.Sprintf("%s step=%d call=%d task=%s", t.Tool, t.Step, t.Call, t.ID),
		OK:   outcome == TaskCancelAcknowledged, Reason: string(outcome)}
}

// ReapTasks sends tasks/cancel for every task still open on its server
// whose run finished more than a lease ago — time enough for the worker
// holding the call, if it lived, to have sent it. [Runtime.Run] calls it
// with every reap; a process that executes nothing (it serves the API)
// calls it itself, every ReapInterval.
func (rt *Runtime) ReapTasks(ctx context.Context) {
	if rt.tasks == nil {
		return
	}
	tasks, err := rt.tasks.TasksToCancel(ctx, rt.cfg.Now().Add(-rt.cfg.LeaseDuration))
	if err != nil {
		rt.logger.Warn("agent: listing the tasks to cancel failed", "error", err)
		return
	}
	for _, t := range tasks {
		rt.cancelTask(ctx, t, byReaper)
	}
}

// RunTaskReaper calls ReapTasks every ReapInterval until ctx ends: for a
// process that serves the API and executes nothing, which records cancels
// but runs no reaper.
func (rt *Runtime) RunTaskReaper(ctx context.Context) { every(ctx, rt.cfg.ReapInterval, rt.ReapTasks) }

// reapMidTask hands a run whose lease lapsed during a call that became a
// task back to the queue with its write fence stamped, for the next worker
// to ask the server what became of the task; it reports whether it did.
// A run out of attempts, or whose task is settled (or that has none), is
// left to the reaper's usual rules.
func (rt *Runtime) reapMidTask(ctx context.Context, run *Run, now time.Time) bool {
	if rt.tasks == nil || MayRetry(run.PendingEffect) || run.Attempts >= rt.cfg.MaxAttempts {
		return false
	}
	ok, err := rt.tasks.RunRequeueStaleTask(ctx, run.ID, now)
	if err != nil {
		rt.logger.Warn("agent: requeueing a run mid-task failed", "run", run.ID, "error", err)
		return false
	}
	if ok {
		rt.logger.Info("agent: reaped a run whose worker went away mid-task; the next worker asks the server", "run", run.ID)
		rt.Wake()
	}
	return ok
}
