package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// taskServer plays the MCP servers' side of tasks for the runtime's
// [agent.TaskTools]: what FollowTask and CancelTask would find there.
type taskServer struct {
	mu        sync.Mutex
	results   map[string]*agent.ToolResult // by task id: how a follow ends
	unknown   map[string]bool              // task ids the server forgot
	followed  []string
	cancelled []string
	cancelAns agent.TaskCancelOutcome
}

// taskToolSet is the test's tools, with the task server behind them.
type taskToolSet struct {
	*toolSet
	srv *taskServer
}

var _ agent.TaskTools = (*taskToolSet)(nil)

func (s *taskToolSet) FollowTask(ctx context.Context, t *agent.Task, trace *agent.TaskTrace) (*agent.ToolResult, error) {
	s.srv.mu.Lock()
	s.srv.followed = append(s.srv.followed, t.ID)
	res, unknown := s.srv.results[t.ID], s.srv.unknown[t.ID]
	s.srv.mu.Unlock()
	if unknown {
		return nil, fmt.Errorf("test server: task %s: %w", t.ID, agent.ErrTaskUnknown)
	}
	if res == nil { // at work until cancelled
		<-ctx.Done()
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "cancelled"}, nil
	}
	if trace != nil && trace.Status != nil {
		trace.Status(agent.TaskState{Status: agent.TaskCompleted})
	}
	return res, nil
}

func (s *taskToolSet) CancelTask(_ context.Context, t *agent.Task) (agent.TaskCancelOutcome, *agent.TaskState, error) {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	s.srv.cancelled = append(s.srv.cancelled, t.ID)
	if s.srv.cancelAns == agent.TaskCancelUnreachable {
		return agent.TaskCancelUnreachable, nil, errors.New("test server: unreachable")
	}
	return agent.TaskCancelAcknowledged, &agent.TaskState{Status: agent.TaskCancelled}, nil
}

func (s *taskServer) seen() (followed, cancelled []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.followed), slices.Clone(s.cancelled)
}

// taskBundle is a runtime whose tools reach a task server, on a clock the
// test moves, with an audit log.
type taskBundle struct {
	*testBundle
	srv   *taskServer
	log   *audit.Log
	mu    sync.Mutex
	clock time.Time
}

func setupTasks(t *testing.T) *taskBundle {
	tb := &taskBundle{srv: &taskServer{results: map[string]*agent.ToolResult{}, unknown: map[string]bool{}}, clock: time.Now()}
	tb.testBundle = setup(t, func(c *agent.Config) {
		c.Tools = &taskToolSet{toolSet: c.Tools.(*toolSet), srv: tb.srv}
		tb.log = audit.New(c.Store.(*countingStore).Store, []byte("0123456789abcdef0123456789abcdef"))
		c.Audit = tb.log
		c.Now = tb.now
	})
	return tb
}

func (tb *taskBundle) now() time.Time {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.clock
}

func (tb *taskBundle) advance(d time.Duration) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.clock = tb.clock.Add(d)
}

func (tb *taskBundle) task(ref agent.CallRef) *agent.Task {
	tb.t.Helper()
	tk, err := tb.store.Store.TaskGet(context.Background(), ref)
	if err != nil || tk == nil {
		tb.t.Fatalf("TaskGet(%+v) = %v, %v", ref, tk, err)
	}
	return tk
}

func (tb *taskBundle) taskCancelRows(runID string) []audit.Row {
	tb.t.Helper()
	rows, err := tb.log.List(context.Background(), audit.Query{RunID: runID, Action: audit.ActionTaskCancel})
	if err != nil {
		tb.t.Fatal(err)
	}
	return rows
}

// abandonMidTask plays a worker that dies during a call that became a
// task: it claims the run, records the model step that asks for tool,
// stamps the fence, persists the call's task taskID, and vanishes, its
// lease running until leaseUntil. It returns the call.
func (tb *taskBundle) abandonMidTask(runID, tool, taskID string, leaseUntil time.Time) agent.CallRef {
	tb.t.Helper()
	ctx := context.Background()
	st := tb.store.Store
	if r, err := st.RunClaimID(ctx, runID, "dead-worker", leaseUntil); err != nil || r == nil {
		tb.t.Fatalf("claim: %v, %v", r, err)
	}
	step := &agent.Step{RunID: runID, Kind: agent.StepModel, Round: 1, Args: []byte(`[{"id":"call_0_0","name":"` + tool + `","arguments":{}}]`)}
	if err := st.StepAppend(ctx, "dead-worker", step); err != nil {
		tb.t.Fatal(err)
	}
	if ok, err := st.RunSetPendingEffect(ctx, runID, "dead-worker", agent.EffectNonIdempotentWrite, leaseUntil); !ok || err != nil {
		tb.t.Fatalf("stamping the fence: %v, %v", ok, err)
	}
	ref := agent.CallRef{RunID: runID, Step: step.Seq, Call: 1, Tool: tool, ArgsDigest: agent.ArgsDigest([]byte(`{}`))}
	if ok, err := st.TaskRecord(ctx, "dead-worker", &agent.Task{CallRef: ref, Server: "srv", ID: taskID, Revision: "2025-11-25"}); !ok || err != nil {
		tb.t.Fatalf("TaskRecord: %v, %v", ok, err)
	}
	return ref
}

// A call that becomes a task has its handle in the store by the time the
// tool goes on to wait for it; once the call's step is recorded, the task
// is settled with the status its result implies.
func TestATaskIsPersistedBeforeTheCallWaits(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	var seen *agent.Task
	var seenErr error
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	tool.run = func(ctx context.Context) (*agent.ToolResult, error) {
		trace := agent.TaskTraceFrom(ctx)
		if trace == nil || trace.Created == nil {
			return nil, errors.New("the call has no task trace")
		}
		if err := trace.Created(&agent.Task{Server: "srv", ID: "task-1", Revision: "2026-07-28", Status: agent.TaskWorking}); err != nil {
			return nil, err
		}
		// The server's side: is the handle there before any waiting?
		tasks, err := tb.store.Store.TaskList(context.Background(), agent.RunIDFrom(ctx))
		if len(tasks) == 1 {
			seen = tasks[0]
		}
		seenErr = err
		trace.Status(agent.TaskState{Status: agent.TaskWorking, Message: "halfway"})
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "the findings"}, nil
	}
	tb.start()
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	got := tb.waitStatus(run.ID, agent.StatusCompleted)
	if seenErr != nil || seen == nil || seen.ID != "task-1" || seen.Server != "srv" || seen.Revision != "2026-07-28" || seen.Tool != "research" {
		t.Fatalf("while the call waited the store held %+v (%v); want task-1 of srv, 2026-07-28, for research", seen, seenErr)
	}
	tk := tb.task(seen.CallRef)
	if !tk.Settled || tk.Status != agent.TaskCompleted {
		t.Errorf("after the run: task %+v; want settled, completed", tk)
	}
	if got.PendingEffect != "" {
		t.Errorf("fence = %q after the call's step was recorded; want cleared", got.PendingEffect)
	}
}

// A handle that cannot be persisted fails the call: the tool is told (and
// cancels the task), and the run stops without the call counting as made.
func TestATaskThatCannotBePersistedFailsTheCall(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	var createdErr error
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	tool.run = func(ctx context.Context) (*agent.ToolResult, error) {
		trace := agent.TaskTraceFrom(ctx)
		// A second task for the same call: the store refuses it.
		t1 := &agent.Task{Server: "srv", ID: "task-1"}
		if err := trace.Created(t1); err != nil {
			return nil, err
		}
		createdErr = trace.Created(&agent.Task{Server: "srv", ID: "task-2"})
		return nil, createdErr
	}
	tb.start()
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	tb.waitStatus(run.ID, agent.StatusCompleted)
	if createdErr == nil {
		t.Fatal("Created accepted a second task for one call")
	}
	steps := tb.steps(run.ID)
	if steps[1].Outcome != agent.OutcomeFailed {
		t.Errorf("the call's outcome = %s, want failed", steps[1].Outcome)
	}
}

// A worker that takes over a run whose worker died mid-task asks the
// server: a completed task's result becomes the call's step, the tool is
// not called again, and the fence comes down — settled by what the server
// said.
func TestTakeoverCollectsACompletedTaskWithoutCallingAgain(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	ref := tb.abandonMidTask(run.ID, "research", "task-7", tb.now().Add(time.Minute))
	tb.srv.results["task-7"] = &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "what the task found"}
	tb.advance(2 * time.Minute) // the lease lapses
	tb.rt.Reap(context.Background())
	if r, _ := tb.store.Store.RunGet(context.Background(), run.ID); r.Status != agent.StatusQueued || r.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Fatalf("reaped mid-task: %s, fence %q; want queued with the fence stamped", r.Status, r.PendingEffect)
	}
	tb.start()
	got := tb.waitStatus(run.ID, agent.StatusCompleted)
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("the tool was called %d times by the new worker; want 0", n)
	}
	if followed, _ := tb.srv.seen(); !slices.Equal(followed, []string{"task-7"}) {
		t.Errorf("the server was asked after %v; want task-7 once", followed)
	}
	steps := tb.steps(run.ID)
	if len(steps) < 2 || steps[1].Kind != agent.StepTool || steps[1].Outcome != agent.OutcomeOK || steps[1].Text != "what the task found" {
		t.Fatalf("steps = %+v; want the task's result as the call's step", steps)
	}
	if got.PendingEffect != "" {
		t.Errorf("fence = %q; want settled by the server's result", got.PendingEffect)
	}
	if tk := tb.task(ref); !tk.Settled || tk.Status != agent.TaskCompleted {
		t.Errorf("task %+v; want settled, completed", tk)
	}
}

// A server that cannot say what became of the task (it forgot it) leaves
// the fence stamped, and the run is dead-lettered, as today.
func TestTakeoverOfAnUnknownTaskDeadLetters(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	ref := tb.abandonMidTask(run.ID, "research", "task-8", tb.now().Add(time.Minute))
	tb.srv.unknown["task-8"] = true
	tb.advance(2 * time.Minute)
	tb.rt.Reap(context.Background())
	tb.start()
	got := tb.waitStatus(run.ID, agent.StatusFailed)
	if got.Reason != agent.ReasonNotRetryable || got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Errorf("run %s (%s), fence %q; want dead-lettered with the fence stamped", got.Status, got.Reason, got.PendingEffect)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("the tool was called %d times; want 0", n)
	}
	if tk := tb.task(ref); tk.Status != agent.TaskUnknown || tk.Settled {
		t.Errorf("task %+v; want unknown, not settled", tk)
	}
}

// A cancel of a run whose worker died mid-task reaches the task: the
// process recording the cancel sends tasks/cancel with the persisted id,
// records the server's answer on the task and in the audit log, and
// reports it. With a live holder, it leaves the cancel to the holder.
func TestCancelWithoutALiveHolderSendsTasksCancel(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	dead := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	ref := tb.abandonMidTask(dead.ID, "research", "task-dead", tb.now().Add(time.Minute))
	live := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	tb.abandonMidTask(live.ID, "research", "task-live", tb.now().Add(time.Hour))
	tb.advance(2 * time.Minute) // the first lease lapses, not the second

	report, err := tb.rt.CancelRun(context.Background(), agent.Actor{ID: "alice"}, dead.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Tasks) != 1 || report.Tasks[0].ByHolder || report.Tasks[0].Outcome != agent.TaskCancelAcknowledged || report.Tasks[0].Task.ID != "task-dead" {
		t.Fatalf("report = %+v; want task-dead acknowledged by the server", report.Tasks)
	}
	if _, cancelled := tb.srv.seen(); !slices.Equal(cancelled, []string{"task-dead"}) {
		t.Fatalf("the server saw tasks/cancel for %v; want task-dead", cancelled)
	}
	if tk := tb.task(ref); tk.CancelOutcome != agent.TaskCancelAcknowledged || tk.Status != agent.TaskCancelled {
		t.Errorf("task %+v; want the cancel acknowledged, status cancelled", tk)
	}
	rows := tb.taskCancelRows(dead.ID)
	if len(rows) != 1 || rows[0].Reason != "acknowledged" || !rows[0].OK || rows[0].Host != "srv" || rows[0].Purpose != "by alice" ||
		rows[0].Path != fmt.Sprintf("research step=%d call=1 task=task-dead", ref.Step) {
		t.Errorf("task_cancel rows = %+v; want one, acknowledged, by alice, naming the call and task", rows)
	}

	report, err = tb.rt.CancelRun(context.Background(), agent.Actor{ID: "alice"}, live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Tasks) != 1 || !report.Tasks[0].ByHolder || report.Tasks[0].Outcome != "" {
		t.Fatalf("report = %+v; want the task left to its live holder", report.Tasks)
	}
	if _, cancelled := tb.srv.seen(); len(cancelled) != 1 {
		t.Fatalf("the server saw tasks/cancel for %v; want only task-dead", cancelled)
	}
}

// The reaper's backstop: a task of a finished run still open on its server
// a lease after the run ended (its holder died before it could cancel) gets
// tasks/cancel; an unreachable server is tried again; an acknowledged
// cancel is not sent again.
func TestTheReaperCancelsTasksThatOutliveTheirRun(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	ref := tb.abandonMidTask(run.ID, "research", "task-9", tb.now().Add(time.Hour))
	report, err := tb.rt.CancelRun(context.Background(), agent.Actor{ID: "alice"}, run.ID)
	if err != nil || len(report.Tasks) != 1 || !report.Tasks[0].ByHolder {
		t.Fatalf("CancelRun = %+v, %v; want the task left to its holder", report, err)
	}
	tb.rt.Reap(context.Background())
	if _, cancelled := tb.srv.seen(); len(cancelled) != 0 {
		t.Fatalf("the reaper sent tasks/cancel for %v within the holder's lease; want none yet", cancelled)
	}
	tb.advance(2 * time.Hour) // the holder had its time, and more
	tb.srv.mu.Lock()
	tb.srv.cancelAns = agent.TaskCancelUnreachable
	tb.srv.mu.Unlock()
	tb.rt.Reap(context.Background())
	if tk := tb.task(ref); tk.CancelOutcome != agent.TaskCancelUnreachable {
		t.Fatalf("task %+v; want the cancel recorded as unreachable", tk)
	}
	tb.srv.mu.Lock()
	tb.srv.cancelAns = ""
	tb.srv.mu.Unlock()
	tb.rt.Reap(context.Background())
	tb.rt.Reap(context.Background())
	if _, cancelled := tb.srv.seen(); !slices.Equal(cancelled, []string{"task-9", "task-9"}) {
		t.Fatalf("the server saw tasks/cancel for %v; want task-9 twice (unreachable, then acknowledged), then no more", cancelled)
	}
	rows := tb.taskCancelRows(run.ID)
	if len(rows) != 2 || rows[0].Reason != "unreachable" || rows[1].Reason != "acknowledged" || rows[1].Purpose != "by the reaper" {
		t.Errorf("task_cancel rows = %+v; want unreachable then acknowledged, by the reaper", rows)
	}
}

// The worker holding a task call cancels it itself when the run is
// cancelled (its MCP client sends tasks/cancel); what the server said is
// recorded on the task and audited.
func TestTheHolderRecordsWhatTheServerSaidToItsCancel(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	started := make(chan agent.CallRef, 1)
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	tool.run = func(ctx context.Context) (*agent.ToolResult, error) {
		trace := agent.TaskTraceFrom(ctx)
		tk := &agent.Task{Server: "srv", ID: "task-held"}
		if err := trace.Created(tk); err != nil {
			return nil, err
		}
		started <- tk.CallRef
		<-ctx.Done()
		trace.Cancelled(agent.TaskCancelAcknowledged, &agent.TaskState{Status: agent.TaskCancelled, Message: "stopped"})
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "cancelled"}, nil
	}
	tb.start()
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	ref := <-started
	report, err := tb.rt.CancelRun(context.Background(), agent.Actor{ID: "alice"}, run.ID)
	if err != nil || len(report.Tasks) != 1 || !report.Tasks[0].ByHolder {
		t.Fatalf("CancelRun = %+v, %v; want the task left to its holder", report, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(tb.taskCancelRows(run.ID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the holder's cancel was never recorded")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if tk := tb.task(ref); tk.CancelOutcome != agent.TaskCancelAcknowledged || tk.Status != agent.TaskCancelled {
		t.Errorf("task %+v; want acknowledged, cancelled", tk)
	}
	if rows := tb.taskCancelRows(run.ID); len(rows) != 1 || rows[0].Purpose != "by the worker holding the call" || !rows[0].OK {
		t.Errorf("task_cancel rows = %+v; want one, acknowledged, by the holder", rows)
	}
	if _, cancelled := tb.srv.seen(); len(cancelled) != 0 {
		t.Errorf("the runtime sent tasks/cancel itself for %v; the holder's client did", cancelled)
	}
}

// A run that went back to the queue mid-task (its worker died) has no live
// holder: cancelling it sends tasks/cancel with the persisted id, and no
// worker ever takes it.
func TestCancelOfARunQueuedMidTaskSendsTasksCancel(t *testing.T) {
	t.Parallel()
	tb := setupTasks(t)
	tool := tb.tools.add(&testTool{name: "research", effect: agent.EffectNonIdempotentWrite})
	run := tb.submit("alice", turn{Calls: []string{"research"}}, turn{Final: "done"})
	tb.abandonMidTask(run.ID, "research", "task-q", tb.now().Add(time.Minute))
	tb.advance(2 * time.Minute)
	tb.rt.Reap(context.Background())
	if r, _ := tb.store.Store.RunGet(context.Background(), run.ID); r.Status != agent.StatusQueued {
		t.Fatalf("run %s after the reap; want queued mid-task", r.Status)
	}
	report, err := tb.rt.CancelRun(context.Background(), agent.Actor{ID: "alice"}, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Tasks) != 1 || report.Tasks[0].ByHolder || report.Tasks[0].Outcome != agent.TaskCancelAcknowledged {
		t.Fatalf("report = %+v; want task-q cancelled by this process, acknowledged", report.Tasks)
	}
	tb.start()
	tb.rt.Reap(context.Background())
	if followed, cancelled := tb.srv.seen(); len(followed) != 0 || !slices.Equal(cancelled, []string{"task-q"}) || tool.calls.Load() != 0 {
		t.Errorf("followed %v, cancelled %v, tool calls %d; want task-q cancelled once, nothing followed or called", followed, cancelled, tool.calls.Load())
	}
}
