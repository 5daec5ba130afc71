package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/andonhq/andon/model"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// maxStepText bounds the text a step stores and the model reads back.
const maxStepText = 64 << 10

// segment is one stretch of a run's execution under one lease: from a
// claim or a resume to the run's end, a suspension, a cancel or a lost
// lease.
type segment struct {
	// parent is the context execute was given: it ends when the process
	// shuts down, which is neither a cancel nor a failure of the run.
	parent context.Context
	rt     *Runtime
	run    *Run
	owner  string
	model  model.Model
	tr     *transcript
	// task is the task of the call in flight, once it became one.
	task *inTask
	// asked holds the seqs of the model steps this segment recorded: their
	// calls were never made by an earlier segment.
	asked map[int]bool
	// fresh: the run's first segment, from its first claim. It has no
	// steps to read back.
	fresh bool
	// settled: the run's last step settled it (StepRecorder).
	settled bool
	// leased is when the lease was last set (Unix nanoseconds): by the
	// claim or resume, a renewal, or a fence. The runtime's renewer
	// renews it (renewer.go), for every segment at once; a step boundary
	// renews it itself only if half of it has passed (the renewer is
	// late): a renewal at every step was a write per step that bought
	// nothing (every step's append is guarded by the lease anyway).
	leased atomic.Int64
}

// begun says how a segment began.
type begun struct {
	// claimed: by a claim, not a resume. A run claimed for the first time
	// (attempts 1) has no steps: no segment held it before.
	claimed bool
	// watched, if set, is execute's ctx with the run watched since before
	// the claim that read its row (Watcher.watchClaim); stop ends that
	// watch. Else execute watches the run, reading its row.
	watched context.Context
	stop    func()
}

// execute drives a claimed run. It never settles a run that was cancelled
// (the row is terminal already) or whose lease it lost (someone else owns
// it now).
func (rt *Runtime) execute(ctx context.Context, run *Run, owner string, how begun) {
	s := &segment{parent: ctx, rt: rt, run: run, owner: owner, fresh: how.claimed && run.Attempts == 1}
	ctx = rt.runTraceParent(ctx, run)
	ctx, span := rt.startSpan(ctx, "invoke_agent", trace.SpanKindInternal,
		attrOperation.String("invoke_agent"), attrRunID.String(run.ID), attrAttempt.Int(run.Attempts))
	s.leased.Store(rt.cfg.Now().UnixNano())
	start := run.StartedAt
	if start.IsZero() {
		start = rt.cfg.Now()
	}
	// The whole segment is watched, so a cancel also stops a model call.
	if how.watched != nil {
		ctx = how.watched
		defer how.stop()
		if span != nil {
			// The claim's watch began before the span: one more, with
			// no read of its own, carries the cancel's signal to it.
			var stop func()
			ctx, stop = rt.watcher.watchSpan(trace.ContextWithSpan(ctx, span), run.ID)
			defer stop()
		}
	} else {
		var stop func()
		ctx, stop = rt.watcher.Watch(WithRunID(ctx, run.ID), run.ID)
		defer stop()
	}
	ctx, cancel := context.WithDeadlineCause(ctx, start.Add(rt.cfg.MaxRunTime), ErrRunDeadline)
	defer cancel()
	ctx, loseLease := context.WithCancelCause(ctx)
	defer loseLease(nil)
	// The runtime's renewer keeps the lease while a long model or tool
	// call runs, one statement for every segment, and ends this one if a
	// renewal loses: the run was cancelled (the watcher says so too) or
	// is no longer ours.
	release := rt.leases.hold(s, loseLease)
	defer release()

	err := s.loop(ctx)
	if span != nil && errors.Is(context.Cause(ctx), ErrRunCancelled) {
		rt.linkCancel(span, run.ID)
	}
	endRunSpan(span, ctx, err)
	var stopped *errStop
	var overBudget *callBudgetError
	// A run cancelled (a read of the row said so) or lost (a renewal
	// found the lease gone; an owner never gets it back) is not settled:
	// the guarded settle could only lose, a write for nothing.
	switch {
	case errors.As(err, &stopped):
		rt.logger.Info("agent: segment ended", "run", run.ID, "why", stopped.why)
	case errors.Is(context.Cause(ctx), ErrRunCancelled):
		rt.logger.Info("agent: segment ended", "run", run.ID, "why", "run cancelled")
	case errors.Is(context.Cause(ctx), ErrLeaseLost):
		rt.logger.Info("agent: segment ended", "run", run.ID, "why", "lease lost")
	case err == nil && s.settled: // the last step's record settled it
	case err == nil:
		s.settle(StatusCompleted, ReasonCompleted, "")
	case errors.Is(context.Cause(ctx), ErrRunDeadline):
		s.settle(StatusFailed, ReasonDeadline, "the run took longer than its limit")
	case errors.Is(err, errMaxRounds):
		s.settle(StatusFailed, ReasonMaxRounds, "the run reached its round limit")
	case errors.As(err, &overBudget):
		s.settle(StatusFailed, overBudget.reason, overBudget.Error())
	case errors.Is(err, errModel):
		s.settle(StatusFailed, ReasonModelFailed, "the model call failed")
	default:
		rt.logger.Warn("agent: run failed", "run", run.ID, "error", err)
		s.settle(StatusFailed, ReasonFailed, "the run failed")
	}
}

var (
	errMaxRounds = errors.New("round limit reached")
	errModel     = errors.New("model call failed")
)

// settle ends the run, guarded by the lease: a segment that lost the run
// changes nothing.
func (s *segment) settle(to Status, reason Reason, errText string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := s.rt.cfg.Store.RunFinish(ctx, s.run.ID, s.owner, to, reason, errText)
	switch {
	case err != nil:
		s.rt.logger.Warn("agent: settling a run failed", "run", s.run.ID, "error", err)
	case !ok:
		s.rt.logger.Info("agent: run not settled: cancelled or no longer ours", "run", s.run.ID)
	}
}

// loop is the executor loop: ask the model, run the tool calls it asked
// for, record each step, probe at every step boundary.
func (s *segment) loop(ctx context.Context) error {
	var req Request
	if err := json.Unmarshal(s.run.Request, &req); err != nil {
		return fmt.Errorf("agent: unreadable request: %w", err)
	}
	var m model.Model = directModel{req.Call}
	var err error
	if req.Call == nil {
		if m, err = s.rt.cfg.NewModel(ctx, &req); err != nil {
			return fmt.Errorf("%w: %w", errModel, err)
		}
	}
	s.model = m
	var steps []*Step
	if !s.fresh { // a first claim's run has no steps: a read for nothing
		if steps, err = s.rt.cfg.Store.StepList(ctx, s.run.ID); err != nil {
			return fmt.Errorf("agent: reading the steps: %w", err)
		}
	}
	var decisions []*Approval
	if len(steps) > 0 { // a decision names a model step: a fresh run has none
		if decisions, err = s.rt.cfg.Store.ApprovalList(ctx, s.run.ID); err != nil {
			return fmt.Errorf("agent: reading the decisions: %w", err)
		}
	}
	if s.tr, err = rebuild(req.Prompt, steps, decisions); err != nil {
		return fmt.Errorf("agent: rebuilding the conversation: %w", err)
	}
	for {
		// The budgets are checked here, before any call of the last turn
		// is made, on every path: after a model turn, and after a resume
		// or a takeover rebuilt the transcript (a recorded turn that asked
		// too much is never played).
		if err := s.withinCallBudgets(); err != nil {
			return err
		}
		// The calls the model asked for that are not yet answered (after
		// a resume, the one an operator decided on comes first). A
		// decision applies only to the call it names.
		for len(s.tr.pending) > 0 {
			call := s.tr.pending[0]
			if err := s.callOrRefuse(ctx, call, s.tr.pendingCall(s.run.ID, call)); err != nil {
				return err
			}
		}
		if s.tr.round > 0 && len(s.tr.messages) > 0 && s.lastTurnWasFinal() {
			return nil
		}
		if s.tr.round >= s.rt.cfg.MaxRounds {
			return errMaxRounds
		}
		if err := s.modelTurn(ctx); err != nil {
			return err
		}
	}
}

// lastTurnWasFinal reports whether the model's last turn asked for no
// tools: the run is done.
func (s *segment) lastTurnWasFinal() bool {
	last := s.tr.messages[len(s.tr.messages)-1]
	return last.Role == model.RoleAssistant && len(last.ToolCalls) == 0
}

// modelTurn asks the model for the next turn and records it.
func (s *segment) modelTurn(ctx context.Context) error {
	tools, err := s.rt.cfg.Tools.List(ctx)
	if err != nil {
		return fmt.Errorf("agent: listing tools: %w", err)
	}
	specs := make([]model.ToolSpec, len(tools))
	for i, t := range tools {
		spec := t.Spec()
		specs[i] = model.ToolSpec{Name: spec.Name, Description: spec.Description, InputSchema: spec.InputSchema}
	}
	start := s.rt.cfg.Now()
	turnCtx, span := s.rt.startSpan(ctx, "chat", trace.SpanKindInternal,
		attrOperation.String("chat"), attrRunID.String(s.run.ID), attrRound.Int(s.tr.round+1))
	resp, err := s.model.Complete(turnCtx, &model.Request{Messages: s.tr.messages, Tools: specs})
	if span != nil {
		if err != nil {
			if s.cancelled(ctx) {
				span.SetAttributes(attrOutcome.String("cancelled"))
			} else {
				span.SetStatus(codes.Error, "the model call failed")
			}
		}
		span.End()
	}
	if err != nil {
		if s.cancelled(ctx) {
			return stopCancelled
		}
		if s.parent.Err() != nil {
			return stopShutdown
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", errModel, err)
	}
	round := s.tr.round + 1
	// Bounded before anything is stored: a call over a limit is refused.
	resp.ToolCalls = boundCalls(resp.ToolCalls)
	var calls json.RawMessage
	if len(resp.ToolCalls) > 0 {
		calls, _ = json.Marshal(resp.ToolCalls)
	}
	step := &Step{RunID: s.run.ID, At: start, Kind: StepModel, Round: round, Args: calls,
		Text: truncate(resp.Text), Duration: s.rt.cfg.Now().Sub(start)}
	// A turn that asks for no tool ends the run (see loop): its step
	// settles it too.
	if err := s.boundary(ctx, step, false, len(resp.ToolCalls) == 0); err != nil {
		return err
	}
	s.tr.messages = append(s.tr.messages, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	s.tr.round = round
	s.tr.turn(step.Seq, resp.ToolCalls)
	if s.asked == nil {
		s.asked = map[int]bool{}
	}
	s.asked[step.Seq] = true
	return nil
}

// toolCall runs one tool call: approval, fence, a fresh look at the run
// row, the call itself, and its step. The operator's decision on exactly
// this call, if there is one, covers it only on the tool it was shown on.
func (s *segment) toolCall(ctx context.Context, call model.ToolCall, pending *PendingCall) error {
	if s.rt.tracer == nil {
		return s.toolCallTraced(ctx, call, pending)
	}
	ctx, span := s.rt.startSpan(ctx, "execute_tool "+call.Name, trace.SpanKindInternal,
		attrOperation.String("execute_tool"), attrToolName.String(call.Name), attrToolCallID.String(call.ID), attrRunID.String(s.run.ID))
	defer span.End()
	return s.toolCallTraced(ctx, call, pending)
}

// toolCallTraced is toolCall within its span, if any (ctx's): recordCall
// sets its outcome.
func (s *segment) toolCallTraced(ctx context.Context, call model.ToolCall, pending *PendingCall) error {
	tool, err := s.rt.cfg.Tools.Tool(ctx, call.Name)
	if err != nil {
		return fmt.Errorf("agent: looking up tool %q: %w", call.Name, err)
	}
	if tool == nil {
		return s.recordCall(ctx, call, OutcomeFailed, fmt.Sprintf("There is no tool called %q.", call.Name), 0, false)
	}
	pending.Identity = identityOf(tool)
	d := s.tr.decision(pending)
	if d != nil && d.Approved && d.Identity != pending.Identity {
		if tool.RequiresApproval() {
			return s.staleApproval(ctx, pending, d, tool)
		}
		d = nil // no approval is asked for any more: the call goes as any other
	}
	if tool.RequiresApproval() && d == nil {
		return s.suspend(ctx, pending, tool)
	}
	if d != nil && !d.Approved {
		return s.recordCall(ctx, call, OutcomeDenied, fmt.Sprintf("The operator denied the call to tool %q.", call.Name), 0, false)
	}
	// A fresh read of the row right before anything is sent: no call goes
	// out for a run that is already cancelled. For a write, the fence is
	// that read: its stamp is guarded on the run running and held, after
	// the watch is registered.
	effect := tool.Effect()
	watch := s.rt.watcher.watchCall
	if effect.IsWrite() {
		watch = s.rt.watcher.watchGuarded
	}
	callCtx, stop := watch(ctx, s.run.ID)
	defer stop()
	callCtx, endAsks := withAsker(callCtx, s, call.Name, s.tr.round) // its server may ask the operator
	if s.cancelled(callCtx) {
		endAsks()
		stop() // nothing to signal: before the boundary, which waits for the signals (signals.go)
		return s.recordCall(ctx, call, OutcomeCancelled, cancelledText(call.Name), 0, false)
	}
	if effect.IsWrite() {
		// The fence goes up before the write can happen, guarded by the
		// lease: a segment without it cannot write at all, and a
		// cancelled run is no longer running, so this loses.
		now := s.rt.cfg.Now()
		ok, err := s.rt.cfg.Store.RunSetPendingEffect(ctx, s.run.ID, s.owner, effect, now.Add(s.rt.cfg.LeaseDuration))
		if err != nil || !ok {
			if s.probeCancelled(context.WithoutCancel(ctx)) {
				// Cancelled before anything was sent, as a read would
				// have found: the call's step says so.
				endAsks()
				stop() // nothing to signal, as above
				return s.recordCall(ctx, call, OutcomeCancelled, cancelledText(call.Name), 0, false)
			}
			return stopLeaseLost
		}
		s.leased.Store(now.UnixNano())
	}
	start := s.rt.cfg.Now()
	res, err := s.callTool(WithCall(callCtx, pending.CallRef), tool, pending.CallRef, call.Arguments)
	endAsks() // no question outlives its call
	stop()    // the call has returned, its signal sent: see signals.go
	took := s.rt.cfg.Now().Sub(start)
	if s.parent.Err() != nil && !s.cancelled(callCtx) {
		// Interrupted by a shutdown: record nothing and leave the fence
		// stamped; the call may have happened.
		return stopShutdown
	}
	if errors.Is(err, ErrTaskUnknown) && !s.cancelled(callCtx) {
		return s.taskUnknown(ctx, pending.CallRef, err)
	}
	switch {
	case err != nil && s.cancelled(callCtx):
		res = &ToolResult{Outcome: OutcomeCancelled, Text: cancelledText(call.Name)}
	case err != nil:
		s.rt.logger.Info("agent: tool call failed", "run", s.run.ID, "tool", call.Name, "error", err)
		res = &ToolResult{Outcome: OutcomeFailed, Text: fmt.Sprintf("The call to tool %q failed.", call.Name)}
	case res == nil:
		res = &ToolResult{Outcome: OutcomeFailed, Text: fmt.Sprintf("The call to tool %q returned nothing.", call.Name)}
	}
	return s.recordCall(ctx, call, res.Outcome, res.Text, took, effect.IsWrite())
}

func cancelledText(tool string) string {
	return fmt.Sprintf("The call to tool %q was cancelled because the run was cancelled.", tool)
}

// recordCall records a tool call's step at a step boundary and answers the
// call in the conversation.
func (s *segment) recordCall(ctx context.Context, call model.ToolCall, outcome Outcome, text string, took time.Duration, write bool) error {
	if s.rt.tracer != nil {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(attrOutcome.String(string(outcome)))
			if outcome == OutcomeFailed {
				span.SetStatus(codes.Error, "the tool call failed")
			}
		}
	}
	step := &Step{RunID: s.run.ID, At: s.rt.cfg.Now().Add(-took), Kind: StepTool, Round: s.tr.round,
		Tool: call.Name, Args: call.Arguments, Outcome: outcome, Text: truncate(text), Duration: took}
	if err := s.boundary(ctx, step, write, false); err != nil {
		return err
	}
	s.tr.answer(step.Text)
	return nil
}

// boundary is the step boundary. The order matters: probe first — a
// cancelled run records the step and stops, never settling and never
// clearing the fence; then record the step; only then clear the fence (or
// renew the lease), guarded by the lease, so a write's fence comes down
// only once its step is recorded on a run that is not cancelled. Every
// write is guarded by the lease, the step too: a segment that lost the run
// writes nothing, not even the step it made.
//
// A model step's boundary reads no row: what follows it asks the row
// anyway, before anything can happen — a tool call's fresh read
// ([Watcher.Watch]) before anything is sent, a suspension or a settlement
// guarded on the run not being cancelled — so the probe there was a read
// per model turn that told nothing new. A tool step's boundary probes:
// after a read-only call, the next thing is a model call, which nothing
// else would stop.
//
// With a store that is a [StepRecorder], the boundary of a tool step or of
// the last step, whose context has not ended, is one statement: the
// append's guard is the probe, and the fence comes down — or, with final
// (the step ends the run), the run is settled as completed — in the same
// transaction, once the step is in (step_record.go). A call that became a
// task takes the steps above: its task is settled between the step and
// the fence.
func (s *segment) boundary(ctx context.Context, step *Step, clearFence, final bool) error {
	store := s.rt.cfg.Store
	// Bookkeeping outlives a cancelled or timed-out context.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// A model step that does not end the run has nothing to fold: no
	// probe, no fence (and on SQLite its append shares a transaction with
	// others', step_batch.go).
	if rec, ok := store.(StepRecorder); ok && (step.Kind != StepModel || final) && s.task == nil && ctx.Err() == nil {
		return s.record(bctx, rec, step, clearFence, final)
	}
	// A context cancelled with ErrRunCancelled is a read of the row
	// already (the watcher's, or the renewer's), or this process's
	// guarded cancel that won. A tool step still reads the row first all
	// the same: measured on PostgreSQL (1,000 in flight, waves of 100),
	// skipping that read sent the cancelled segments' appends to the pool
	// while the wave's later cancels were still being written, and the
	// cancels' p99 rose from about 40 to 50–60 ms.
	if s.cancelled(ctx) {
		// Signals before bookkeeping: the calls that the cancels under
		// way stopped send their signals first (signals.go).
		s.rt.watcher.awaitSignals(bctx)
	}
	if (step.Kind != StepModel && s.probeCancelled(bctx)) || s.cancelled(ctx) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lastStepBudget)
		defer cancel()
		err := store.StepAppend(lctx, s.owner, step)
		if err == nil {
			s.settleTask(lctx)
		}
		switch {
		case errors.Is(err, ErrLeaseLost):
			s.rt.logger.Info("agent: the last step of a cancelled run not recorded: the run was no longer ours", "run", s.run.ID)
		case err != nil:
			s.rt.logger.Warn("agent: recording the last step of a cancelled run failed", "run", s.run.ID, "error", err)
		}
		return stopCancelled
	}
	if err := store.StepAppend(bctx, s.owner, step); errors.Is(err, ErrLeaseLost) {
		return s.lost(bctx)
	} else if err != nil {
		// An unrecorded write is worse than a failed run: fail closed.
		return fmt.Errorf("agent: recording a step: %w", err)
	}
	// A task the step answers is settled before the fence comes down: a
	// worker that takes over in between finds the call answered.
	s.settleTask(bctx)
	if clearFence {
		now := s.rt.cfg.Now()
		if ok, err := store.RunSetPendingEffect(bctx, s.run.ID, s.owner, "", now.Add(s.rt.cfg.LeaseDuration)); err != nil || !ok {
			return s.lost(bctx)
		}
		s.leased.Store(now.UnixNano())
	} else if err := s.keepLease(bctx, s.rt.cfg.Now()); err != nil {
		return err
	}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrRunDeadline) {
		return ctx.Err()
	}
	return nil
}

// record is the boundary in one statement (see boundary).
func (s *segment) record(ctx context.Context, rec StepRecorder, step *Step, clearFence, final bool) error {
	now := s.rt.cfg.Now()
	var then StepThen
	if clearFence {
		then.ClearFence, then.LeaseUntil = true, now.Add(s.rt.cfg.LeaseDuration)
	}
	if final {
		then.Finish, then.Reason = StatusCompleted, ReasonCompleted
	}
	got, err := rec.StepRecord(ctx, s.owner, step, then)
	switch {
	case errors.Is(err, ErrLeaseLost):
		return s.lost(ctx)
	case err != nil:
		// An unrecorded write is worse than a failed run: fail closed.
		return fmt.Errorf("agent: recording a step: %w", err)
	case got.Cancelled:
		return stopCancelled // the step is in; the fence stays up
	case final && !got.Done, clearFence && !got.Done:
		return s.lost(ctx)
	case final:
		s.settled = true
		return nil
	case clearFence:
		s.leased.Store(now.UnixNano())
		return nil
	}
	return s.keepLease(ctx, now)
}

// keepLease renews the lease at a step boundary if, at now, it is stale by
// half its duration; fresher, the renewer keeps it (see segment.leased).
func (s *segment) keepLease(ctx context.Context, now time.Time) error {
	if now.Sub(time.Unix(0, s.leased.Load())) < s.rt.cfg.LeaseDuration/2 {
		return nil
	}
	if ok, err := s.renew(ctx); err != nil || !ok {
		return s.lost(ctx)
	}
	return nil
}

// lastStepBudget bounds the recording of a cancelled run's last step, the
// record of what became of the call it had in flight; other bookkeeping
// gets 10 s. In a storm of thousands of cancels every segment records its
// last step at once, and on SQLite they queue for the one writer, which
// River's job completer holds for seconds at a time (thousands of job
// completions in one transaction): at 10,000 runs, 10 s lost half of them.
// The appends of the queue share transactions (sqlstore's group commit),
// so once the writer is free they drain fast; a minute still bounds a
// segment whose store is gone.
const lastStepBudget = time.Minute

// lost explains a guarded write that did not win: the run was cancelled,
// or the lease is gone.
func (s *segment) lost(ctx context.Context) error {
	if s.probeCancelled(context.WithoutCancel(ctx)) {
		return stopCancelled
	}
	return stopLeaseLost
}

// probeCancelled reads the run row: the step-boundary probe. A store error
// is not a cancellation.
func (s *segment) probeCancelled(ctx context.Context) bool {
	statuses, err := s.rt.cfg.Store.RunStatuses(ctx, []string{s.run.ID})
	if err != nil {
		s.rt.logger.Warn("agent: probing the run failed; treating it as not cancelled", "run", s.run.ID, "error", err)
		return false
	}
	return statuses[s.run.ID] == StatusCancelled
}

// cancelled reports whether ctx ended because the run was cancelled.
func (s *segment) cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrRunCancelled)
}

// suspend stores the resumable state — the call, named exactly — and
// hands the run to the operator.
func (s *segment) suspend(ctx context.Context, call *PendingCall, tool Tool) error {
	if fe, ok := tool.(FourEyesTool); ok {
		call.FourEyes = fe.FourEyes()
	}
	state, err := json.Marshal(call)
	if err != nil {
		return fmt.Errorf("agent: encoding the pending call: %w", err)
	}
	ok, err := s.rt.cfg.Store.RunSuspend(context.WithoutCancel(ctx), s.run.ID, s.owner, StatusWaitingForApproval, state)
	if err != nil || !ok {
		return s.lost(ctx)
	}
	s.rt.logger.Info("agent: run waiting for approval", "run", s.run.ID, "tool", call.Tool, "step", call.Step, "call", call.Call)
	return stopSuspended
}

// staleApproval answers an approval given for the call on a tool that is
// no longer the one it would reach, and still asks for approval: nothing
// is called, a step says why, and the run waits for a new decision on the
// call as it is now.
func (s *segment) staleApproval(ctx context.Context, pending *PendingCall, d *Approval, tool Tool) error {
	step := &Step{RunID: s.run.ID, At: s.rt.cfg.Now(), Kind: StepApproval, Round: pending.Round, Tool: pending.Tool,
		Args: pending.Args, Outcome: OutcomeStale, Text: fmt.Sprintf("The approval by %s no longer applies: tool %q is not the one it was given for "+
			"(its server's definition or the tool's schema changed since); the call waits for a new decision.", d.By, pending.Tool)}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.rt.cfg.Store.StepAppend(bctx, s.owner, step); errors.Is(err, ErrLeaseLost) {
		return s.lost(bctx)
	} else if err != nil {
		return fmt.Errorf("agent: recording a stale approval: %w", err)
	}
	s.rt.logger.Warn("agent: an approval no longer applies: the tool changed since", "run", s.run.ID, "tool", pending.Tool,
		"step", pending.Step, "call", pending.Call, "approved_by", d.By)
	return s.suspend(ctx, pending, tool)
}

// renew renews the lease and notes when.
func (s *segment) renew(ctx context.Context) (bool, error) {
	now := s.rt.cfg.Now()
	ok, err := s.rt.cfg.Store.RunRenewLease(ctx, s.run.ID, s.owner, now.Add(s.rt.cfg.LeaseDuration))
	if ok {
		s.leased.Store(now.UnixNano())
	}
	return ok, err
}

// truncate cuts text to maxStepText bytes, on a character boundary (the
// store keeps text as UTF-8).
func truncate(text string) string {
	if len(text) <= maxStepText {
		return text
	}
	cut := maxStepText
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "\n[truncated]"
}
