package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
)

// testBundle is a runtime on a real SQLite store, with tools the test
// controls.
type testBundle struct {
	t     *testing.T
	store *countingStore
	rt    *agent.Runtime
	tools *toolSet
	path  string // the SQLite file
}

func setup(t *testing.T, adjust func(*agent.Config)) *testBundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "andon.db")
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &testBundle{t: t, store: &countingStore{Store: st}, tools: &toolSet{tools: map[string]*testTool{}}, path: path}
	cfg := agent.Config{
		Store:         b.store,
		Tools:         b.tools,
		NewModel:      newStepModel,
		WatchInterval: 20 * time.Millisecond,
		ClaimInterval: 5 * time.Millisecond,
		ReapInterval:  time.Hour,
		LeaseDuration: time.Minute,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	rt, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	b.rt = rt
	return b
}

// start runs the runtime's worker loop until the test ends.
func (b *testBundle) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.rt.Run(ctx)
	}()
	b.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// submit queues a run whose model makes the given turns.
func (b *testBundle) submit(owner string, turns ...turn) *agent.Run {
	b.t.Helper()
	script, _ := json.Marshal(turns)
	run, err := b.rt.Submit(context.Background(), owner, &agent.Request{Prompt: "test", Script: script})
	if err != nil {
		b.t.Fatal(err)
	}
	return run
}

// waitStatus waits until the run reaches status (a deadline only keeps a
// broken test from hanging).
func (b *testBundle) waitStatus(id string, want agent.Status) *agent.Run {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		run, err := b.store.Store.RunGet(context.Background(), id)
		if err != nil {
			b.t.Fatal(err)
		}
		if run.Status == want {
			return run
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("run %s is %s (reason %q), want %s", id, run.Status, run.Reason, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (b *testBundle) steps(id string) []*agent.Step {
	b.t.Helper()
	steps, err := b.store.Store.StepList(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return steps
}

// turn is one model turn of a test script: tool calls, or a final text.
type turn struct {
	Calls []string `json:"calls,omitempty"` // tool names
	Final string   `json:"final,omitempty"`
}

// stepModel plays turns, choosing the next by how many assistant messages
// the conversation holds, so a resumed run goes on where it stopped.
type stepModel struct{ turns []turn }

func newStepModel(_ context.Context, req *agent.Request) (model.Model, error) {
	var turns []turn
	if err := json.Unmarshal(req.Script, &turns); err != nil {
		return nil, err
	}
	return &stepModel{turns: turns}, nil
}

func (m *stepModel) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := 0
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			k++
		}
	}
	if k >= len(m.turns) {
		return &model.Response{Text: "script over"}, nil
	}
	resp := &model.Response{Text: m.turns[k].Final}
	for i, name := range m.turns[k].Calls {
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: fmt.Sprintf("call_%d_%d", k, i), Name: name, Arguments: json.RawMessage(`{}`)})
	}
	return resp, nil
}

// testTool is a tool whose behaviour the test sets.
type testTool struct {
	name     string
	effect   agent.Effect
	approval bool
	fourEyes bool // the run's owner may not approve its calls
	calls    atomic.Int64
	mu       sync.Mutex
	args     []string // the arguments of every call, in order
	// run, if set, is what a call does; by default it returns "ok".
	run func(ctx context.Context) (*agent.ToolResult, error)
	// identity is what the tool says it is (agent.IdentifiedTool): a test
	// changes it to stand for a server redefined under the same name.
	identity atomic.Pointer[string]
}

func (t *testTool) Identity() string {
	if id := t.identity.Load(); id != nil {
		return *id
	}
	return ""
}

func (t *testTool) setIdentity(id string) { t.identity.Store(&id) }

func (t *testTool) Spec() agent.ToolSpec   { return agent.ToolSpec{Name: t.name} }
func (t *testTool) Effect() agent.Effect   { return t.effect }
func (t *testTool) RequiresApproval() bool { return t.approval }
func (t *testTool) FourEyes() bool         { return t.fourEyes }
func (t *testTool) Call(ctx context.Context, args json.RawMessage) (*agent.ToolResult, error) {
	t.calls.Add(1)
	t.mu.Lock()
	t.args = append(t.args, string(args))
	t.mu.Unlock()
	if t.run != nil {
		return t.run(ctx)
	}
	return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, nil
}

// called returns the arguments of every call made so far.
func (t *testTool) called() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.args)
}

// blockUntilCancelled is a tool body that signals it started, then waits
// for its context and reports a cancelled outcome, as an MCP tool does.
func blockUntilCancelled(started chan<- struct{}) func(ctx context.Context) (*agent.ToolResult, error) {
	return func(ctx context.Context) (*agent.ToolResult, error) {
		close(started)
		<-ctx.Done()
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "cancelled"}, nil
	}
}

type toolSet struct {
	mu    sync.Mutex
	tools map[string]*testTool
}

func (s *toolSet) add(t *testTool) *testTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools[t.name] = t
	return t
}

func (s *toolSet) Tool(_ context.Context, name string) (agent.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tools[name]; ok {
		return t, nil
	}
	return nil, nil
}

func (s *toolSet) List(context.Context) ([]agent.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agent.Tool
	for _, t := range s.tools {
		out = append(out, t)
	}
	return out, nil
}

// countingStore counts the status reads the runtime makes, and can fail them.
type countingStore struct {
	*sqlstore.Store
	statusReads atomic.Int64
	stepLists   atomic.Int64 // StepList calls
	failStatus  atomic.Bool
	emptyClaims atomic.Int64 // claims that found nothing queued
	renewals    atomic.Int64 // RunRenewLease calls, and leases RunRenewLeases was given
	single      atomic.Int64 // RunRenewLease calls only
	// renewBatches holds the runs each RunRenewLeases call named.
	batchMu      sync.Mutex
	renewBatches [][]string
}

func (c *countingStore) RunRenewLeases(ctx context.Context, leases []agent.Lease, leaseUntil time.Time) ([]string, error) {
	c.renewals.Add(int64(len(leases)))
	ids := make([]string, len(leases))
	for i, l := range leases {
		ids[i] = l.RunID
	}
	c.batchMu.Lock()
	c.renewBatches = append(c.renewBatches, ids)
	c.batchMu.Unlock()
	return c.Store.RunRenewLeases(ctx, leases, leaseUntil)
}

// batches returns the runs each RunRenewLeases call named, so far.
func (c *countingStore) batches() [][]string {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	return slices.Clone(c.renewBatches)
}

func (c *countingStore) RunRenewLease(ctx context.Context, id, owner string, leaseUntil time.Time) (bool, error) {
	c.renewals.Add(1)
	c.single.Add(1)
	return c.Store.RunRenewLease(ctx, id, owner, leaseUntil)
}

func (c *countingStore) RunClaim(ctx context.Context, owner string, leaseUntil time.Time) (*agent.Run, error) {
	run, err := c.Store.RunClaim(ctx, owner, leaseUntil)
	if run == nil && err == nil {
		c.emptyClaims.Add(1)
	}
	return run, err
}

func (c *countingStore) StepList(ctx context.Context, runID string) ([]*agent.Step, error) {
	c.stepLists.Add(1)
	return c.Store.StepList(ctx, runID)
}

func (c *countingStore) RunStatuses(ctx context.Context, ids []string) (map[string]agent.Status, error) {
	c.statusReads.Add(1)
	if c.failStatus.Load() {
		return nil, fmt.Errorf("store unavailable")
	}
	return c.Store.RunStatuses(ctx, ids)
}
