package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/model"
)

// CallRef names one tool call of a run exactly: the model step that asked
// for it (its seq) and its place among that step's calls (from 1), the
// tool, and the digest of its arguments. A provider's call id is no part
// of it: providers number calls per response ("call_0", "fn:0"), so two
// different calls of one run may carry the same id.
type CallRef struct {
	RunID string `json:"run_id"`
	// Step is the seq of the model step that asked for the call.
	Step int `json:"step"`
	// Call is the call's position among that step's calls, from 1.
	Call int    `json:"call"`
	Tool string `json:"tool"`
	// ArgsDigest is [ArgsDigest] of the call's arguments.
	ArgsDigest string `json:"args_digest"`
}

// PendingCall is the tool call a run waiting for approval waits on: what
// an operator is asked to approve, and the run's resumable state.
type PendingCall struct {
	CallRef
	// Args are the call's arguments, as the model gave them.
	Args json.RawMessage `json:"args,omitempty"`
	// CallID is the provider's id of the call: shown, never matched.
	CallID string `json:"call_id,omitempty"`
	Round  int    `json:"round"`
	// FourEyes says that the run's owner may not approve the call (see
	// [FourEyesTool]); an admin still may, and that is audited.
	FourEyes bool `json:"four_eyes,omitempty"`
	// Identity is the [IdentifiedTool.Identity] of the tool when the run
	// began to wait: an approval covers the call on that tool only.
	Identity string `json:"tool_identity,omitempty"`
}

// Pending returns the call a run waiting for approval waits on, or nil if
// it waits on none. A run suspended by a version of andon that did not
// name its call exactly has none: deciding on it makes it ask again.
func (r *Run) Pending() *PendingCall {
	if r.Status != StatusWaitingForApproval {
		return nil
	}
	return pendingOf(r.Suspended)
}

// pendingOf reads the resumable state of a suspension, whatever the run's
// status now.
func pendingOf(state json.RawMessage) *PendingCall {
	var p PendingCall
	if len(state) == 0 || json.Unmarshal(state, &p) != nil || p.ArgsDigest == "" {
		return nil
	}
	return &p
}

// Approval is an operator's decision on one tool call. It covers the call
// its CallRef names and no other.
type Approval struct {
	CallRef
	CallID   string // the provider's id of the call, for the record
	Approved bool   // false: denied
	By       string // who decided
	// Override is set when an admin approved a call of their own run
	// that needed another person's approval (four eyes).
	Override bool
	At       time.Time
	// Identity is the identity of the tool the call was shown on (see
	// [IdentifiedTool]): an approval does not cover the call once its
	// tool is another, even under the same name. A denial holds whatever
	// the tool became.
	Identity string
}

// IdentifiedTool is a [Tool] that can say what it is beyond its name: a
// digest of everything that decides what a call of it does (for an MCP
// tool, its server's command and arguments or URL, its auth binding, and
// the tool's input schema). An approval names the identity the operator
// was shown: if the tool is another when the approved call is about to be
// made — its server was redefined between the approval and the call, or
// across a restart — the call is not made; the run records why and waits
// for a new decision.
type IdentifiedTool interface {
	Tool
	Identity() string
}

// identityOf returns tool's identity, or "" for a tool that has none.
func identityOf(tool Tool) string {
	if it, ok := tool.(IdentifiedTool); ok {
		return it.Identity()
	}
	return ""
}

// ArgsDigest is the digest of a tool call's arguments that an approval
// names: "sha256:" and the hex SHA-256 of their canonical JSON (keys
// sorted, no insignificant space, numbers as written). Absent arguments
// are {}. Arguments that are not JSON are digested as they are.
func ArgsDigest(args json.RawMessage) string {
	sum := sha256.Sum256(canonicalJSON(args))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func canonicalJSON(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil { // maps encode with their keys sorted
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FourEyesTool is a [Tool] whose calls may need a second person: when
// FourEyes reports true (and the tool requires approval), the run's owner
// may not approve its calls; another operator allowed to act on the run,
// or an admin, may. An admin approving their own run's call is an
// override, and audited as one. Anyone allowed may deny.
type FourEyesTool interface {
	Tool
	FourEyes() bool
}

// Auditor records audit rows; *audit.Log implements it.
type Auditor interface {
	Record(ctx context.Context, e audit.Entry) (audit.Row, error)
}

// ErrFourEyes reports an approval by the run's own owner of a call that
// needs another person's. It wraps [ErrForbidden].
var ErrFourEyes = fmt.Errorf("%w: the call needs the approval of someone other than the run's owner", ErrForbidden)

// Approve lets the tool call a run is waiting on go ahead: the decision is
// stored, naming that call (see [CallRef]), and audited; the run resumes in
// a new leased segment (on this runtime, or through the queue) and the
// call is made. The approval covers that call and no other, whatever id
// the provider gave it. Of two concurrent decisions, one wins; the other
// gets ErrNotWaiting. The run's owner may not approve a four-eyes call
// (ErrFourEyes) unless they are an admin.
func (rt *Runtime) Approve(ctx context.Context, actor Actor, runID string) error {
	return rt.Decide(ctx, actor, Decision{RunID: runID, Approve: true})
}

// Deny refuses the tool call a run is waiting on: the decision is stored
// and audited, and the run resumes. The call is not made; its step records
// outcome denied, and the model is told that the operator denied it and
// goes on (it may answer, or ask for something else, which needs its own
// approval). A denial does not end the run.
func (rt *Runtime) Deny(ctx context.Context, actor Actor, runID string) error {
	return rt.Decide(ctx, actor, Decision{RunID: runID})
}

// Decision is an operator's answer to the call a run waits on.
type Decision struct {
	RunID   string
	Approve bool // false: deny
	// Call, if set, names the call the operator was shown: the decision
	// is refused with ErrNotWaiting unless the run waits on exactly that
	// call, so an operator never decides on a call they have not seen.
	Call *CallRef
}

// Decide approves or denies the call a run waits on, as [Runtime.Approve]
// and [Runtime.Deny] describe.
func (rt *Runtime) Decide(ctx context.Context, actor Actor, d Decision) error {
	runID, approve := d.RunID, d.Approve
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return err
	}
	if !actor.mayAct(run) {
		return fmt.Errorf("%w: %s may not decide for run %s", ErrForbidden, actor.ID, runID)
	}
	if run.Status.Terminal() {
		return fmt.Errorf("%w: run %s", ErrFinished, runID)
	}
	call := run.Pending()
	if d.Call != nil && (call == nil || *d.Call != call.CallRef) {
		return fmt.Errorf("%w: run %s does not wait on the call named (%s)", ErrNotWaiting, runID, describeRef(*d.Call))
	}
	a := &Approval{Approved: approve, By: actor.ID}
	if call != nil && approve && call.FourEyes && actor.ID == run.Owner {
		if !actor.Admin {
			if err := rt.audit(ctx, auditRefusal(call, actor)); err != nil {
				rt.logger.Warn("agent: auditing a refused approval failed", "run", runID, "error", err)
			}
			return fmt.Errorf("%w: %s owns run %s", ErrFourEyes, actor.ID, runID)
		}
		a.Override = true
	}
	owner := rt.newOwner("resume")
	resumed, err := rt.cfg.Store.RunResume(ctx, runID, StatusWaitingForApproval, owner, rt.cfg.Now().Add(rt.cfg.LeaseDuration))
	if err != nil {
		return fmt.Errorf("agent: resuming run %s: %w", runID, err)
	}
	if resumed == nil {
		return rt.lostRace(ctx, runID, "resuming")
	}
	switch now := pendingOf(resumed.Suspended); {
	case call == nil && now == nil:
		// Suspended without naming its call: nothing can be approved.
		// The run goes on, finds no decision, and asks again, naming it.
		rt.logger.Info("agent: a run waited on a call it did not name; it asks again", "run", runID)
		if err := rt.handOn(ctx, resumed, owner); err != nil {
			return err
		}
		return fmt.Errorf("%w: run %s waited in an older format and now asks again: look at the call and decide", ErrNotWaiting, runID)
	case call == nil || now == nil || now.CallRef != call.CallRef || now.FourEyes != call.FourEyes || now.Identity != call.Identity:
		// Decided and suspended again between the read and the resume:
		// what actor looked at is not what the run waits on now.
		rt.putBack(ctx, resumed, owner)
		return fmt.Errorf("%w: run %s waits on another call now", ErrNotWaiting, runID)
	}
	a.CallRef, a.CallID, a.Identity, a.At = call.CallRef, call.CallID, call.Identity, rt.cfg.Now()
	// The audit row comes first: a decision that is not audited is not
	// made.
	if err := rt.audit(ctx, auditDecision(a)); err != nil {
		rt.putBack(ctx, resumed, owner)
		return fmt.Errorf("agent: auditing the decision on run %s: %w", runID, err)
	}
	ok, err := rt.cfg.Store.ApprovalRecord(ctx, a, owner)
	if err != nil {
		rt.putBack(ctx, resumed, owner)
		return fmt.Errorf("agent: recording the decision on run %s: %w", runID, err)
	}
	if !ok {
		// Cancelled since the resume (nothing to put back), or decided
		// already.
		lost := rt.lostRace(ctx, runID, "recording the decision on")
		if errors.Is(lost, ErrNotWaiting) {
			rt.putBack(ctx, resumed, owner)
		}
		return lost
	}
	// The decision is also a step, for the run's history.
	outcome, text := OutcomeOK, "approved by "+actor.ID
	switch {
	case !approve:
		outcome, text = OutcomeDenied, "denied by "+actor.ID
	case a.Override:
		text += " (admin override of four eyes)"
	}
	if err := rt.cfg.Store.StepAppend(ctx, owner, &Step{RunID: runID, At: a.At, Kind: StepApproval, Round: call.Round,
		Tool: call.Tool, Args: call.Args, Outcome: outcome, Text: text}); err != nil {
		rt.logger.Warn("agent: recording an approval step failed", "run", runID, "error", err)
	}
	rt.logger.Info("agent: tool call decided", "run", runID, "tool", call.Tool, "step", call.Step, "call", call.Call,
		"approved", approve, "by", actor.ID, "override", a.Override)
	return rt.handOn(ctx, resumed, owner)
}

// handOn goes on with a resumed run: through the queue, or in a segment of
// this runtime.
func (rt *Runtime) handOn(ctx context.Context, resumed *Run, owner string) error {
	if resumed.Home != "" { // a direct call: its caller's process takes it back
		ok, err := rt.cfg.Store.RunHandHome(ctx, resumed.ID, owner, rt.cfg.Now().Add(rt.cfg.LeaseDuration))
		if err != nil {
			return fmt.Errorf("agent: handing run %s back to its caller: %w", resumed.ID, err)
		}
		if !ok {
			return rt.lostRace(ctx, resumed.ID, "handing back to its caller")
		}
		rt.homes.wake(resumed.ID)
		return nil
	}
	if rt.cfg.ResumeElsewhere || rt.cfg.Queue != nil {
		ok, err := rt.cfg.Store.RunRequeue(ctx, resumed.ID, owner)
		if err != nil {
			return fmt.Errorf("agent: handing run %s to the workers: %w", resumed.ID, err)
		}
		if !ok {
			return rt.lostRace(ctx, resumed.ID, "handing to the workers")
		}
		rt.Wake()
		return nil
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		rt.execute(rt.baseCtx, resumed, owner, begun{})
	}()
	return nil
}

// lostRace explains a guarded step of a decision on run runID (doing what)
// that did not win: the run finished meanwhile — an operator cancelled it
// between the decision's read and this step — (ErrFinished), or it is no
// longer held for this decision (ErrNotWaiting). Either is a conflict for
// the client, never a failure; a store that cannot say is one.
func (rt *Runtime) lostRace(ctx context.Context, runID, doing string) error {
	run, err := rt.cfg.Store.RunGet(context.WithoutCancel(ctx), runID)
	if err != nil {
		return fmt.Errorf("agent: %s run %s did not win, and reading it failed: %w", doing, runID, err)
	}
	if run.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s: %s it did not win", ErrFinished, runID, run.Status, doing)
	}
	return fmt.Errorf("%w: run %s: %s it did not win: look at it again", ErrNotWaiting, runID, doing)
}

// putBack suspends a run resumed for a decision that was not made, as it
// was: it goes on waiting for one.
func (rt *Runtime) putBack(ctx context.Context, resumed *Run, owner string) {
	ok, err := rt.cfg.Store.RunSuspend(context.WithoutCancel(ctx), resumed.ID, owner, StatusWaitingForApproval, resumed.Suspended)
	if err != nil || !ok {
		// The lease lapses and the reaper hands the run on; it finds no
		// decision and asks again.
		rt.logger.Warn("agent: putting a run back to wait for approval failed", "run", resumed.ID, "error", err)
	}
}

// audit records e, if the runtime has an Auditor.
func (rt *Runtime) audit(ctx context.Context, e audit.Entry) error {
	if rt.cfg.Audit == nil {
		return nil
	}
	_, err := rt.cfg.Audit.Record(context.WithoutCancel(ctx), e)
	return err
}

// The reasons of the decision rows: fixed literals.
const (
	auditApproved       = "approved"
	auditDenied         = "denied"
	auditOverride       = "admin override of four eyes"
	auditOwnRunFourEyes = "four eyes: the run's owner may not approve"
)

// auditDecision is the audit row of a decision: the run, who, and the call
// it names — tool, step, position and digest, never the arguments.
func auditDecision(a *Approval) audit.Entry {
	e := audit.Entry{Time: a.At, Action: audit.ActionCallApproved, RunID: a.RunID, Purpose: "by " + a.By,
		Path: describeRef(a.CallRef), OK: a.Approved, Reason: auditApproved}
	switch {
	case !a.Approved:
		e.Action, e.Reason = audit.ActionCallDenied, auditDenied
	case a.Override:
		e.Reason = auditOverride
	}
	return e
}

func auditRefusal(call *PendingCall, actor Actor) audit.Entry {
	return audit.Entry{Action: audit.ActionCallApprovalRefused, RunID: call.RunID, Purpose: "by " + actor.ID,
		Path: describeRef(call.CallRef), Reason: auditOwnRunFourEyes}
}

func describeRef(r CallRef) string {
	return fmt.Sprintf("%s step=%d call=%d args=%s", r.Tool, r.Step, r.Call, r.ArgsDigest)
}

// pendingCall is the PendingCall of the first call the transcript has not
// answered.
func (t *transcript) pendingCall(runID string, call model.ToolCall) *PendingCall {
	return &PendingCall{
		CallRef: CallRef{RunID: runID, Step: t.step, Call: t.answered + 1, Tool: call.Name, ArgsDigest: ArgsDigest(call.Arguments)},
		Args:    call.Arguments, CallID: call.ID, Round: t.round,
	}
}
