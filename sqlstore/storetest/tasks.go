package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// TaskStore is what the task suite needs: runs and their task handles.
type TaskStore interface {
	agent.Store
	agent.TaskStore
}

// ExerciseTasks runs the suite of [agent.TaskStore]. newStore returns a
// fresh, empty store for one test and arranges its cleanup.
func ExerciseTasks(t *testing.T, newStore func(t *testing.T) TaskStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s TaskStore)
	}{
		{"ATaskComesBackWithEverythingItNames", testTaskRoundTrip},
		{"ATaskIsRecordedOnlyByTheLeaseOwnerOfARunningRun", testTaskNeedsTheLease},
		{"ACallBecomesOneTask", testTaskOncePerCall},
		{"ATerminalTaskStatusIsNeverReplaced", testTaskTerminalStatus},
		{"AnAcknowledgedCancelStaysAcknowledged", testTaskCancelAcknowledged},
		{"SettlingRecordsAFinalStatusOnlyOverAnOpenOne", testTaskSettle},
		{"TasksToCancelAreOpenTasksOfFinishedRuns", testTasksToCancel},
		{"AStaleRunMidTaskIsRequeuedWithItsFence", testRequeueStaleTask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func task(run string, step, call int, id string) *agent.Task {
	return &agent.Task{
		CallRef: agent.CallRef{RunID: run, Step: step, Call: call, Tool: "mcp_e2e_research", ArgsDigest: "sha256:aa"},
		Server:  "e2e", ID: id, Revision: "2025-11-25", Status: agent.TaskWorking, StatusMessage: "started",
		CreatedAt: at(time.Second), UpdatedAt: at(time.Second),
	}
}

func taskDiff(got, want *agent.Task) string {
	if got == nil {
		return "no task"
	}
	if got.CallRef != want.CallRef || got.Server != want.Server || got.ID != want.ID || got.Revision != want.Revision ||
		got.Status != want.Status || got.StatusMessage != want.StatusMessage || !got.CreatedAt.Equal(want.CreatedAt) ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || !got.CancelAt.Equal(want.CancelAt) || got.CancelOutcome != want.CancelOutcome ||
		got.Settled != want.Settled {
		return fmt.Sprintf("task = %+v, want %+v", *got, *want)
	}
	return ""
}

func mustGetTask(t *testing.T, s TaskStore, want *agent.Task) {
	t.Helper()
	got, err := s.TaskGet(t.Context(), want.CallRef)
	if err != nil {
		t.Fatalf("TaskGet(%+v): %v", want.CallRef, err)
	}
	if d := taskDiff(got, want); d != "" {
		t.Fatal(d)
	}
}

func recordTask(t *testing.T, s TaskStore, owner string, tk *agent.Task) {
	t.Helper()
	ok, err := s.TaskRecord(t.Context(), owner, tk)
	mustWin(t, fmt.Sprintf("TaskRecord(step %d call %d)", tk.Step, tk.Call), ok, err)
}

// A handle comes back with the call it names, the server, the task id and
// revision, its status and times; TaskList orders by step, then call; a
// call without a task has none.
func testTaskRoundTrip(t *testing.T, s TaskStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	later, first, second := task("r1", 5, 1, "t-later"), task("r1", 2, 1, "t-first"), task("r1", 2, 2, "t-second")
	for _, tk := range []*agent.Task{later, second, first} {
		recordTask(t, s, "w1", tk)
	}
	mustGetTask(t, s, second)
	list, err := s.TaskList(ctx, "r1")
	if err != nil || len(list) != 3 {
		t.Fatalf("TaskList = %v, %v; want 3 tasks", list, err)
	}
	for i, want := range []*agent.Task{first, second, later} {
		if d := taskDiff(list[i], want); d != "" {
			t.Fatalf("task %d: %s", i, d)
		}
	}
	if got, err := s.TaskGet(ctx, agent.CallRef{RunID: "r1", Step: 9, Call: 1}); got != nil || err != nil {
		t.Fatalf("TaskGet of a call without a task = %v, %v; want nil, nil", got, err)
	}
}

// Only the segment holding a running run records a task: a handle written
// by a segment that lost the run would name a call that segment may not
// make.
func testTaskNeedsTheLease(t *testing.T, s TaskStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	ok, err := s.TaskRecord(ctx, "w2", task("r1", 1, 1, "t1"))
	mustLose(t, "TaskRecord by a non-owner", ok, err)
	ok, err = s.TaskRecord(ctx, "", task("r1", 1, 1, "t1"))
	mustRefuse(t, "TaskRecord with an empty owner", ok, err)
	ok, err = s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	ok, err = s.TaskRecord(ctx, "w1", task("r1", 1, 1, "t1"))
	mustLose(t, "TaskRecord on a cancelled run", ok, err)
	if list, err := s.TaskList(ctx, "r1"); err != nil || len(list) != 0 {
		t.Fatalf("TaskList = %v, %v; want none recorded", list, err)
	}
}

func testTaskOncePerCall(t *testing.T, s TaskStore) {
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	first := task("r1", 1, 1, "t1")
	recordTask(t, s, "w1", first)
	ok, err := s.TaskRecord(t.Context(), "w1", task("r1", 1, 1, "t2"))
	mustLose(t, "a second TaskRecord for one call", ok, err)
	mustGetTask(t, s, first)
}

// A status report that arrives after the task ended (a late notification,
// a poll answered out of order) changes nothing.
func testTaskTerminalStatus(t *testing.T, s TaskStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	tk := task("r1", 1, 1, "t1")
	recordTask(t, s, "w1", tk)
	ok, err := s.TaskSetStatus(ctx, tk.CallRef, agent.TaskState{Status: agent.TaskInputRequired, Message: "which city?"}, at(2*time.Second))
	mustWin(t, "TaskSetStatus(input_required)", ok, err)
	ok, err = s.TaskSetStatus(ctx, tk.CallRef, agent.TaskState{Status: agent.TaskCancelled, Message: "stopped"}, at(3*time.Second))
	mustWin(t, "TaskSetStatus(cancelled)", ok, err)
	ok, err = s.TaskSetStatus(ctx, tk.CallRef, agent.TaskState{Status: agent.TaskWorking, Message: "late"}, at(4*time.Second))
	mustLose(t, "TaskSetStatus(working) after cancelled", ok, err)
	tk.Status, tk.StatusMessage, tk.UpdatedAt = agent.TaskCancelled, "stopped", at(3*time.Second)
	mustGetTask(t, s, tk)
}

func testTaskCancelAcknowledged(t *testing.T, s TaskStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	tk := task("r1", 1, 1, "t1")
	recordTask(t, s, "w1", tk)
	for i, o := range []agent.TaskCancelOutcome{agent.TaskCancelUnreachable, agent.TaskCancelAcknowledged, agent.TaskCancelRejected} {
		if err := s.TaskSetCancel(ctx, tk.CallRef, o, at(time.Duration(10+i)*time.Second)); err != nil {
			t.Fatalf("TaskSetCancel(%s): %v", o, err)
		}
	}
	tk.CancelOutcome, tk.CancelAt = agent.TaskCancelAcknowledged, at(11*time.Second)
	mustGetTask(t, s, tk)
}

func testTaskSettle(t *testing.T, s TaskStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	open, done, cancelled := task("r1", 1, 1, "t1"), task("r1", 1, 2, "t2"), task("r1", 1, 3, "t3")
	for _, tk := range []*agent.Task{open, done, cancelled} {
		recordTask(t, s, "w1", tk)
	}
	ok, err := s.TaskSetStatus(ctx, cancelled.CallRef, agent.TaskState{Status: agent.TaskCancelled}, at(2*time.Second))
	mustWin(t, "TaskSetStatus(cancelled)", ok, err)
	for _, c := range []struct {
		tk    *agent.Task
		final agent.TaskStatus
	}{{open, ""}, {done, agent.TaskCompleted}, {cancelled, agent.TaskCompleted}} {
		if err := s.TaskSettle(ctx, c.tk.CallRef, c.final); err != nil {
			t.Fatalf("TaskSettle: %v", err)
		}
	}
	open.Settled = true
	done.Settled, done.Status = true, agent.TaskCompleted
	cancelled.Settled, cancelled.Status, cancelled.StatusMessage, cancelled.UpdatedAt = true, agent.TaskCancelled, "", at(2*time.Second)
	mustGetTask(t, s, open)
	mustGetTask(t, s, done)
	mustGetTask(t, s, cancelled)
}

// The reaper's list: an open task of a run that finished before the cut,
// whose cancel was never sent or found the server unreachable. Not a task
// of a run still running, not one the server said is over, not one whose
// cancel was acknowledged or refused, not one of a run finished since.
func testTasksToCancel(t *testing.T, s TaskStore) {
	ctx := t.Context()
	for _, id := range []string{"cancelled", "running", "acked", "refused", "unreachable"} {
		insertRunning(t, s, id, "w1", at(time.Hour))
		recordTask(t, s, "w1", task(id, 1, 1, "t-"+id))
	}
	insertRunning(t, s, "over", "w1", at(time.Hour))
	over := task("over", 1, 1, "t-over")
	recordTask(t, s, "w1", over)
	ok, err := s.TaskSetStatus(ctx, over.CallRef, agent.TaskState{Status: agent.TaskCompleted}, at(time.Minute))
	mustWin(t, "TaskSetStatus", ok, err)
	for _, c := range []struct {
		id      string
		outcome agent.TaskCancelOutcome
	}{{"acked", agent.TaskCancelAcknowledged}, {"refused", agent.TaskCancelRejected}, {"unreachable", agent.TaskCancelUnreachable}} {
		if err := s.TaskSetCancel(ctx, agent.CallRef{RunID: c.id, Step: 1, Call: 1}, c.outcome, at(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"cancelled", "acked", "refused", "unreachable", "over"} {
		ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
		mustWin(t, "cancel "+id, ok, err)
	}
	cut := time.Now().Add(time.Hour)
	got, err := s.TasksToCancel(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, tk := range got {
		ids[tk.ID] = true
	}
	if len(got) != 2 || !ids["t-cancelled"] || !ids["t-unreachable"] {
		t.Fatalf("TasksToCancel = %v; want t-cancelled and t-unreachable", ids)
	}
	if got, err := s.TasksToCancel(ctx, time.Now().Add(-time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("TasksToCancel before the runs finished = %v, %v; want none", got, err)
	}
}

// A run whose lease lapsed while its call's task was open goes back to the
// queue with its write fence still stamped: the server, not the stamp,
// settles it. A run whose task is settled, or that has none, is not
// requeued this way; nor is a live one.
func testRequeueStaleTask(t *testing.T, s TaskStore) {
	ctx := t.Context()
	for _, id := range []string{"mid-task", "settled", "no-task", "live"} {
		lease := at(time.Hour)
		if id == "live" {
			lease = at(3 * time.Hour)
		}
		insertRunning(t, s, id, "w1", lease)
		ok, err := s.RunSetPendingEffect(ctx, id, "w1", agent.EffectNonIdempotentWrite, lease)
		mustWin(t, "fence "+id, ok, err)
		if id != "no-task" {
			recordTask(t, s, "w1", task(id, 1, 1, "t-"+id))
		}
	}
	if err := s.TaskSettle(ctx, agent.CallRef{RunID: "settled", Step: 1, Call: 1}, agent.TaskCompleted); err != nil {
		t.Fatal(err)
	}
	now := at(2 * time.Hour)
	ok, err := s.RunRequeueStaleTask(ctx, "mid-task", now)
	mustWin(t, "RunRequeueStaleTask(mid-task)", ok, err)
	r := get(t, s, "mid-task")
	if r.Status != agent.StatusQueued || r.LeaseOwner != "" || !r.LeaseExpires.IsZero() || r.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Fatalf("requeued mid-task: %+v; want queued, no lease, the fence stamped", r)
	}
	for _, id := range []string{"settled", "no-task", "live"} {
		ok, err := s.RunRequeueStaleTask(ctx, id, now)
		mustLose(t, "RunRequeueStaleTask("+id+")", ok, err)
	}
}
