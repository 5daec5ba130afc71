package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/andonhq/andon/model"
)

// DirectCall is one call of a tool that a caller outside the runtime asks
// for — the gateway, on behalf of an MCP client — made as a run of its own
// ([Runtime.Call]), so that it is a call of the runtime like any other: the
// tool's budget, the write fence, approvals, the audit row, the watcher,
// and an operator's cancel.
type DirectCall struct {
	// Tool is the tool's name, as [Tools] knows it.
	Tool string `json:"tool"`
	// Arguments are the call's arguments, a JSON object or empty.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Session names the caller's session (the gateway's downstream MCP
	// session), so that its calls can be listed and stopped together.
	Session string `json:"session,omitempty"`
	// Client names who asked (the downstream client), for the record.
	Client string `json:"client,omitempty"`
}

// CallResult is how a [Runtime.Call] ended.
type CallResult struct {
	// Run is the call's run, as it ended.
	Run *Run
	// Step is the step of the tool call, or nil if the call was never
	// reached (the run was cancelled or failed before it).
	Step *Step
}

// ErrCallerGone is the cause of a direct call's run when its caller's
// context ended before the call did: the run is cancelled with it.
var ErrCallerGone = errors.New("agent: the caller of a direct call went away")

// Call makes one tool call as a run of its own, executed in this process
// alone for a caller that waits for it here ([Run].Home is this runtime),
// and returns how it ended. The run is born running, owned by owner; it
// never goes to a queue. A tool that needs approval makes the run wait as
// any run does, for a decision from any process (the console, andon
// approve); the decision hands the run back here and Call goes on with it.
// ctx's values reach the tool's call (a gateway's sink for the raw MCP
// result, say); ctx's end — the caller cancelled, or went away — cancels
// the run, as an operator's cancel would, and Call returns once the run
// has ended: the call is told on its server's wire and the step recorded.
//
// An error means the run could not be started, or its row could not be
// read; otherwise the result's Run says how it ended.
func (rt *Runtime) Call(ctx context.Context, owner string, call *DirectCall) (*CallResult, error) {
	if call == nil || call.Tool == "" {
		return nil, errors.New("agent: a direct call needs a tool")
	}
	req := &Request{Prompt: fmt.Sprintf("A direct call of tool %q.", call.Tool), Model: "direct", Call: call}
	raw, err := requestJSON(req)
	if err != nil {
		return nil, err
	}
	now := rt.cfg.Now()
	seg := rt.newOwner("call")
	run := &Run{ID: newRunID(), Owner: owner, Request: raw, Status: StatusRunning, LeaseOwner: seg,
		LeaseExpires: now.Add(rt.cfg.LeaseDuration), Attempts: 1, CreatedAt: now, StartedAt: now, Home: rt.cfg.WorkerID}
	if err := rt.cfg.Store.RunInsert(ctx, run); err != nil {
		return nil, fmt.Errorf("agent: storing the call's run: %w", err)
	}
	// The caller's end cancels the run, as an operator's cancel: the call
	// is told on the wire and the run ends cancelled, its fence kept.
	stopCancel := context.AfterFunc(ctx, func() {
		cctx, cancel := context.WithTimeout(withCancelCause(context.WithoutCancel(ctx), CauseCaller), 10*time.Second)
		defer cancel()
		if err := rt.Cancel(cctx, Actor{ID: owner}, run.ID); err != nil && !errors.Is(err, ErrFinished) {
			rt.logger.Warn("agent: cancelling a direct call whose caller went away failed", "run", run.ID, "error", err)
		}
		rt.homes.wake(run.ID) // a call waiting for a decision looks again
	})
	defer stopCancel()
	home := rt.homes.add(run.ID)
	defer rt.homes.remove(run.ID)
	// The segments run under the runtime's own context (a shutdown is not
	// a cancel), carrying the caller's values.
	execCtx := valuesOf{Context: rt.baseCtx, values: ctx}
	rt.execute(execCtx, run, seg, begun{claimed: true})
	for {
		got, err := rt.cfg.Store.RunGet(context.WithoutCancel(ctx), run.ID)
		if err != nil {
			return nil, fmt.Errorf("agent: reading the call's run: %w", err)
		}
		switch {
		case got.Status.Terminal():
			return rt.callResult(context.WithoutCancel(ctx), got)
		case got.Status == StatusQueued: // handed back by a decision: take it
			seg = rt.newOwner("call")
			claimed, err := rt.cfg.Store.RunClaimID(context.WithoutCancel(ctx), run.ID, seg, rt.cfg.Now().Add(rt.cfg.LeaseDuration))
			if err != nil {
				return nil, fmt.Errorf("agent: taking the call's run back: %w", err)
			}
			if claimed != nil {
				rt.execute(execCtx, claimed, seg, begun{claimed: true})
			}
			continue
		case rt.baseCtx.Err() != nil:
			return nil, fmt.Errorf("agent: the runtime stopped while call %s waited: %w", run.ID, context.Cause(rt.baseCtx))
		}
		// Waiting for a decision (or held by a segment of another
		// runtime, briefly, between a decision and its hand-back).
		t := time.NewTimer(rt.cfg.InputPollInterval)
		select {
		case <-home:
		case <-t.C:
		case <-rt.baseCtx.Done():
		}
		t.Stop()
	}
}

// callResult is the result of a direct call's run that has ended.
func (rt *Runtime) callResult(ctx context.Context, run *Run) (*CallResult, error) {
	steps, err := rt.cfg.Store.StepList(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("agent: reading the call's steps: %w", err)
	}
	res := &CallResult{Run: run}
	for _, st := range steps {
		if st.Kind == StepTool {
			res.Step = st
		}
	}
	return res, nil
}

// directModel is the model of a direct call's run: its first turn asks for
// the call, its next one ends the run.
type directModel struct{ call *DirectCall }

func (m directModel) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			return &model.Response{}, nil // the call was asked for: done
		}
	}
	args := m.call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return &model.Response{ToolCalls: []model.ToolCall{{ID: "call_1", Name: m.call.Tool, Arguments: args}}}, nil
}

// valuesOf is a context that ends with Context and carries the values of
// values: a segment of a direct call ends with the runtime, not with its
// caller, whose end is a cancel of the run instead.
type valuesOf struct {
	context.Context
	values context.Context
}

func (v valuesOf) Value(key any) any { return v.values.Value(key) }

// homes are the direct calls whose callers wait in this process: a
// decision made here wakes its caller at once (others find it when they
// next look).
type homes struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func (h *homes) add(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = map[string]chan struct{}{}
	}
	ch := make(chan struct{}, 1)
	h.waiting[id] = ch
	return ch
}

func (h *homes) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting, id)
}

// wake tells the caller of run id, if it waits here, that its run moved.
func (h *homes) wake(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.waiting[id]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
