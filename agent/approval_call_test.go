package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
)

// scriptModel plays the run's script with model/script.
func scriptModel(_ context.Context, req *agent.Request) (model.Model, error) {
	s, err := script.Parse(req.Script)
	if err != nil {
		return nil, err
	}
	return script.New(s)
}

// submitScript queues a run whose model plays src (model/script, YAML).
func (b *testBundle) submitScript(owner, src string) *agent.Run {
	b.t.Helper()
	s, err := script.Parse([]byte(src))
	if err != nil {
		b.t.Fatal(err)
	}
	raw, _ := json.Marshal(s)
	run, err := b.rt.Submit(context.Background(), owner, &agent.Request{Prompt: "test", Model: "script", Script: raw})
	if err != nil {
		b.t.Fatal(err)
	}
	return run
}

// waitPending waits until the run waits for approval and returns the call
// it waits on.
func (b *testBundle) waitPending(id string) *agent.PendingCall {
	b.t.Helper()
	p := b.waitStatus(id, agent.StatusWaitingForApproval).Pending()
	if p == nil {
		b.t.Fatalf("run %s waits for approval without naming the call", id)
	}
	return p
}

func (b *testBundle) approvals(id string) []*agent.Approval {
	b.t.Helper()
	list, err := b.store.Store.ApprovalList(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return list
}

// A provider numbers calls per response, so the model asks for
// deploy{"env":"production"} with the id its approved
// deploy{"env":"staging"} had. The staging approval does not cover it: the
// production call waits for its own decision and, denied, never runs.
func TestAnApprovalCoversItsCallNotItsID(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.NewModel = scriptModel })
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submitScript("alice", `
steps:
  - tool_calls: [{name: deploy, arguments: {env: staging}, id: call_0}]
  - tool_calls: [{name: deploy, arguments: {env: production}, id: call_0}]
  - text: done
`)
	alice := agent.Actor{ID: "alice"}
	staging := b.waitPending(run.ID)
	if staging.Tool != "deploy" || string(staging.Args) != `{"env":"staging"}` || staging.CallID != "call_0" ||
		staging.ArgsDigest != agent.ArgsDigest(json.RawMessage(`{"env":"staging"}`)) {
		t.Fatalf("the first pending call = %+v; want deploy {\"env\":\"staging\"}, id call_0, with its digest", staging)
	}
	if err := b.rt.Approve(context.Background(), alice, run.ID); err != nil {
		t.Fatal(err)
	}
	production := b.waitPending(run.ID)
	if string(production.Args) != `{"env":"production"}` || production.CallID != "call_0" ||
		production.Step <= staging.Step || production.ArgsDigest == staging.ArgsDigest {
		t.Fatalf("the second pending call = %+v; want deploy {\"env\":\"production\"}, id call_0, a later step, its own digest", production)
	}
	if got := deploy.called(); !slices.Equal(got, []string{`{"env":"staging"}`}) {
		t.Fatalf("deploy was called with %q; want staging only: production must wait for its own approval", got)
	}
	if err := b.rt.Deny(context.Background(), alice, run.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if got := deploy.called(); !slices.Equal(got, []string{`{"env":"staging"}`}) {
		t.Fatalf("deploy was called with %q; the denied production call ran", got)
	}
	var outcomes []string
	for _, st := range b.steps(run.ID) {
		if st.Kind == agent.StepTool {
			outcomes = append(outcomes, string(st.Args)+" "+string(st.Outcome)+": "+st.Text)
		}
	}
	want := []string{`{"env":"staging"} ok: ok`, `{"env":"production"} denied: The operator denied the call to tool "deploy".`}
	if !slices.Equal(outcomes, want) {
		t.Errorf("tool steps = %q, want %q", outcomes, want)
	}
	decisions := b.approvals(run.ID)
	if len(decisions) != 2 || decisions[0].CallRef != staging.CallRef || !decisions[0].Approved || decisions[0].By != "alice" ||
		decisions[1].CallRef != production.CallRef || decisions[1].Approved || decisions[0].At.IsZero() {
		t.Errorf("stored decisions = %+v, %+v; want staging approved and production denied, by alice, each naming its call", decisions[0], decisions[1])
	}
}

// Under four eyes the run's owner may not approve its call: refused with
// ErrFourEyes, audited, nothing runs. Another admin approves; the owner,
// if an admin, may override, and the row says so.
func TestFourEyesRefusesTheOwnerAndAuditsAnAdminsOverride(t *testing.T) {
	t.Parallel()
	var log *audit.Log
	b := setup(t, func(c *agent.Config) {
		log = audit.New(c.Store.(*countingStore).Store, []byte("0123456789abcdef0123456789abcdef"))
		c.Audit = log
	})
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true, fourEyes: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Calls: []string{"deploy"}}, turn{Final: "done"})
	first := b.waitPending(run.ID)
	if !first.FourEyes {
		t.Fatalf("pending call %+v does not say it needs four eyes", first)
	}
	err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID)
	if !errors.Is(err, agent.ErrFourEyes) || !errors.Is(err, agent.ErrForbidden) {
		t.Fatalf("the owner's approval = %v, want ErrFourEyes (an ErrForbidden)", err)
	}
	if got := b.waitPending(run.ID); got.CallRef != first.CallRef || deploy.calls.Load() != 0 || len(b.approvals(run.ID)) != 0 {
		t.Fatalf("after a refused approval: waits on %+v, %d calls, %d decisions; want the same call, none, none", got, deploy.calls.Load(), len(b.approvals(run.ID)))
	}
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "root", Admin: true}, run.ID); err != nil {
		t.Fatalf("another admin's approval: %v", err)
	}
	second := b.waitPending(run.ID)
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice", Admin: true}, run.ID); err != nil {
		t.Fatalf("the owner's approval as an admin: %v", err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := deploy.calls.Load(); n != 2 {
		t.Errorf("deploy ran %d times, want 2", n)
	}
	decisions := b.approvals(run.ID)
	if len(decisions) != 2 || decisions[0].By != "root" || decisions[0].Override || decisions[1].By != "alice" || !decisions[1].Override {
		t.Errorf("stored decisions = %+v; want root's approval, then alice's override", decisions)
	}

	rows, err := log.List(context.Background(), audit.Query{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join([]string{string(r.Action), r.Purpose, r.Path, r.Reason}, " | "))
	}
	ref := func(c *agent.PendingCall) string {
		return "deploy step=" + strconv.Itoa(c.Step) + " call=1 args=" + agent.ArgsDigest(json.RawMessage(`{}`))
	}
	want := []string{
		"call_approval_refused | by alice | " + ref(first) + " | four eyes: the run's owner may not approve",
		"call_approved | by root | " + ref(first) + " | approved",
		"call_approved | by alice | " + ref(second) + " | admin override of four eyes",
	}
	if !slices.Equal(got, want) {
		t.Errorf("audit rows of the run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := log.Verify(context.Background()); err != nil {
		t.Errorf("the audit log does not verify: %v", err)
	}
}

// Under four eyes the owner may still deny: refusing is always allowed.
func TestFourEyesLetsTheOwnerDeny(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true, fourEyes: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "not deploying"})
	b.waitPending(run.ID)
	if err := b.rt.Deny(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatalf("the owner's denial: %v", err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if deploy.calls.Load() != 0 {
		t.Error("a denied call ran")
	}
}

// A decision that names the call the operator was shown lands only if the
// run waits on exactly that call.
func TestADecisionNamingAnotherCallIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.NewModel = scriptModel })
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submitScript("alice", `
steps:
  - tool_calls: [{name: deploy, arguments: {env: production}, id: call_0}]
  - text: done
`)
	pending := b.waitPending(run.ID)
	alice := agent.Actor{ID: "alice"}
	shown := pending.CallRef
	shown.ArgsDigest = agent.ArgsDigest(json.RawMessage(`{"env":"staging"}`))
	err := b.rt.Decide(context.Background(), alice, agent.Decision{RunID: run.ID, Approve: true, Call: &shown})
	if !errors.Is(err, agent.ErrNotWaiting) {
		t.Fatalf("an approval naming the staging call = %v, want ErrNotWaiting", err)
	}
	if got := b.waitPending(run.ID); got.CallRef != pending.CallRef || deploy.calls.Load() != 0 || len(b.approvals(run.ID)) != 0 {
		t.Fatalf("after a refused approval: waits on %+v, %d calls, %d decisions", got, deploy.calls.Load(), len(b.approvals(run.ID)))
	}
	if err := b.rt.Decide(context.Background(), alice, agent.Decision{RunID: run.ID, Approve: true, Call: &pending.CallRef}); err != nil {
		t.Fatalf("an approval naming the call it waits on: %v", err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if got := deploy.called(); !slices.Equal(got, []string{`{"env":"production"}`}) {
		t.Errorf("deploy was called with %q", got)
	}
}

// The digest is of the arguments' meaning: key order and spacing do not
// change it; a different value does.
func TestArgsDigestIsCanonical(t *testing.T) {
	t.Parallel()
	a := agent.ArgsDigest(json.RawMessage(`{"env":"staging","n":1,"tags":["a","b"]}`))
	if b := agent.ArgsDigest(json.RawMessage(" { \"tags\": [\"a\", \"b\"], \"n\": 1,\n \"env\": \"staging\" } ")); b != a {
		t.Errorf("reordered, respaced arguments digest to %s, want %s", b, a)
	}
	if c := agent.ArgsDigest(json.RawMessage(`{"env":"production","n":1,"tags":["a","b"]}`)); c == a {
		t.Error("different arguments have the same digest")
	}
	if e, n := agent.ArgsDigest(nil), agent.ArgsDigest(json.RawMessage(`{}`)); e != n || !strings.HasPrefix(e, "sha256:") || len(e) != len("sha256:")+64 {
		t.Errorf("digests of absent and empty arguments: %s, %s; want one sha256:<64 hex>", e, n)
	}
}

// failingAuditor refuses every row.
type failingAuditor struct{}

func (failingAuditor) Record(context.Context, audit.Entry) (audit.Row, error) {
	return audit.Row{}, errors.New("audit store unavailable")
}

// A decision that cannot be audited is not made: the run goes on waiting
// on the same call, nothing is stored, nothing runs.
func TestADecisionThatCannotBeAuditedIsNotMade(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.Audit = failingAuditor{} })
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "done"})
	pending := b.waitPending(run.ID)
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID); err == nil {
		t.Fatal("an approval that could not be audited succeeded")
	}
	if got := b.waitPending(run.ID); got.CallRef != pending.CallRef || deploy.calls.Load() != 0 || len(b.approvals(run.ID)) != 0 {
		t.Fatalf("after an unaudited approval: waits on %+v, %d calls, %d decisions; want the same call, none, none",
			got, deploy.calls.Load(), len(b.approvals(run.ID)))
	}
}

// A run suspended before calls were named (its state holds only the
// provider's call id) cannot be approved blindly: deciding on it makes it
// ask again, naming the call, and nothing runs until that is decided.
func TestARunSuspendedWithoutNamingItsCallAsksAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	deploy := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	ctx := context.Background()
	script, _ := json.Marshal([]turn{{Calls: []string{"deploy"}}, {Final: "done"}})
	req, _ := json.Marshal(agent.Request{Prompt: "test", Script: script})
	old := &agent.Run{ID: "run_old", Owner: "alice", Request: req, Status: agent.StatusRunning, LeaseOwner: "old", LeaseExpires: time.Now().Add(time.Hour)}
	if err := b.store.Store.RunInsert(ctx, old); err != nil {
		t.Fatal(err)
	}
	calls, _ := json.Marshal([]model.ToolCall{{ID: "call_0", Name: "deploy", Arguments: json.RawMessage(`{}`)}})
	if err := b.store.Store.StepAppend(ctx, "old", &agent.Step{RunID: old.ID, Kind: agent.StepModel, Round: 1, Args: calls}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.Store.RunSuspend(ctx, old.ID, "old", agent.StatusWaitingForApproval, []byte(`{"call_id":"call_0","tool":"deploy","round":1}`)); err != nil || !ok {
		t.Fatalf("suspending: %v, %v", ok, err)
	}
	if p := b.waitStatus(old.ID, agent.StatusWaitingForApproval).Pending(); p != nil {
		t.Fatalf("an old suspension names a call: %+v", p)
	}
	if err := b.rt.Approve(ctx, agent.Actor{ID: "alice"}, old.ID); !errors.Is(err, agent.ErrNotWaiting) {
		t.Fatalf("approving an old suspension = %v, want ErrNotWaiting", err)
	}
	p := b.waitPending(old.ID)
	if p.Tool != "deploy" || p.Step != 1 || p.Call != 1 || p.CallID != "call_0" || deploy.calls.Load() != 0 || len(b.approvals(old.ID)) != 0 {
		t.Fatalf("after the blind approval: pending %+v, %d calls, %d decisions; want the call named, none, none", p, deploy.calls.Load(), len(b.approvals(old.ID)))
	}
	if err := b.rt.Approve(ctx, agent.Actor{ID: "alice"}, old.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(old.ID, agent.StatusCompleted)
	if n := deploy.calls.Load(); n != 1 {
		t.Errorf("deploy ran %d times, want 1", n)
	}
}
