package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/andonhq/andon/agent"
)

func TestRunCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"lookup"}}, turn{Final: "done"})
	got := b.waitStatus(run.ID, agent.StatusCompleted)
	if got.Reason != agent.ReasonCompleted || got.FinishedAt.IsZero() || !got.LeaseExpires.IsZero() {
		t.Errorf("completed run = %+v", got)
	}
	steps := b.steps(run.ID)
	if len(steps) != 3 || steps[0].Kind != agent.StepModel || steps[1].Kind != agent.StepTool || steps[1].Outcome != agent.OutcomeOK || steps[2].Text != "done" {
		t.Errorf("steps = %s", formatSteps(steps))
	}
}

func TestRoundLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.MaxRounds = 2 })
	b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"lookup"}}, turn{Calls: []string{"lookup"}}, turn{Calls: []string{"lookup"}})
	if got := b.waitStatus(run.ID, agent.StatusFailed); got.Reason != agent.ReasonMaxRounds {
		t.Errorf("reason = %s, want max_rounds", got.Reason)
	}
}

func TestUnknownToolIsReportedToTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start()
	run := b.submit("alice", turn{Calls: []string{"nope"}}, turn{Final: "ok"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if steps := b.steps(run.ID); steps[1].Outcome != agent.OutcomeFailed {
		t.Errorf("unknown tool step = %+v", steps[1])
	}
}

// Only the owner or an admin may cancel; the refusal changes nothing.
func TestCancelNeedsOwnerOrAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	run := b.submit("alice", turn{Final: "x"})
	err := b.rt.Cancel(context.Background(), agent.Actor{ID: "mallory"}, run.ID)
	if !errors.Is(err, agent.ErrForbidden) {
		t.Fatalf("Cancel by a stranger = %v, want ErrForbidden", err)
	}
	if got := b.waitStatus(run.ID, agent.StatusQueued); got.Status != agent.StatusQueued {
		t.Fatal("unreachable")
	}
	if err := b.rt.Cancel(context.Background(), agent.Actor{ID: "root", Admin: true}, run.ID); err != nil {
		t.Fatalf("Cancel by an admin = %v", err)
	}
	if err := b.rt.Cancel(context.Background(), agent.Actor{ID: "nobody"}, "run_missing"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("Cancel of an unknown run = %v, want ErrNotFound", err)
	}
}

// Cancelled is terminal: a second cancel loses, and a cancelled queued run
// is never claimed.
func TestCancelledIsTerminal(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	run := b.submit("alice", turn{Calls: []string{"lookup"}}, turn{Final: "done"})
	alice := agent.Actor{ID: "alice"}
	if err := b.rt.Cancel(context.Background(), alice, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Cancel(context.Background(), alice, run.ID); !errors.Is(err, agent.ErrFinished) {
		t.Errorf("second Cancel = %v, want ErrFinished", err)
	}
	b.start()
	other := b.submit("alice", turn{Final: "done"}) // proves the worker is claiming
	b.waitStatus(other.ID, agent.StatusCompleted)
	got := b.waitStatus(run.ID, agent.StatusCancelled)
	if got.Reason != agent.ReasonCancelled || got.StartedAt != (time.Time{}) || tool.calls.Load() != 0 {
		t.Errorf("cancelled queued run = %+v, tool calls %d; it must never be claimed", got, tool.calls.Load())
	}
}

func formatSteps(steps []*agent.Step) string {
	var s string
	for _, st := range steps {
		s += "\n  " + string(st.Kind) + " " + st.Tool + " " + string(st.Outcome) + " " + st.Text
	}
	return s
}

// Every tool call carries its run's id, for the audit rows of what it sends.
func TestToolCallsCarryTheRunID(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var seen string
	b.tools.add(&testTool{name: "look", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		seen = agent.RunIDFrom(ctx)
		return &agent.ToolResult{Outcome: agent.OutcomeOK}, nil
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"look"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if seen != run.ID {
		t.Errorf("RunIDFrom = %q, want %q", seen, run.ID)
	}
}

// A step's text is cut on a character boundary: the stores keep UTF-8.
func TestLongToolTextIsCutOnACharacter(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	long := strings.Repeat("é", 40000) // 80,000 bytes of two-byte characters
	b.tools.add(&testTool{name: "long", effect: agent.EffectReadOnly, run: func(context.Context) (*agent.ToolResult, error) {
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "x" + long}, nil
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"long"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	text := b.steps(run.ID)[1].Text
	if !utf8.ValidString(text) || !strings.HasSuffix(text, "[truncated]") {
		t.Errorf("step text of %d bytes: valid UTF-8 %v, ends %q", len(text), utf8.ValidString(text), text[len(text)-20:])
	}
}

// A run queued by another process is claimed at once when the runtime is
// woken, not at its next claim interval (here an hour).
func TestWakeClaimsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.ClaimInterval = time.Hour })
	b.start()
	// Once the worker has found nothing queued, it waits: an hour, or a wake.
	for b.store.emptyClaims.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Another process queues a run: straight into the store.
	run := &agent.Run{ID: "run_elsewhere", Owner: "alice", Request: []byte(`{"prompt":"p","script":[{"final":"done"}]}`), Status: agent.StatusQueued, CreatedAt: time.Now()}
	if err := b.store.Store.RunInsert(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a claim that should not happen gets every chance to
	if got, _ := b.store.Store.RunGet(context.Background(), run.ID); got.Status != agent.StatusQueued {
		t.Fatalf("the run was claimed (%s) before any wake", got.Status)
	}
	b.rt.Wake()
	b.waitStatus(run.ID, agent.StatusCompleted)
	// A run this runtime queues wakes it too.
	own := b.submit("alice", turn{Final: "done"})
	b.waitStatus(own.ID, agent.StatusCompleted)
}

// A cancel that the one-statement cancel does not win says why, in the
// words it always used: the run is read only then.
func TestCancelRefusalsSayWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	run := b.submit("alice", turn{Final: "x"})
	ctx := context.Background()
	for _, tc := range []struct {
		by   agent.Actor
		id   string
		is   error
		want string
	}{
		{agent.Actor{ID: "mallory"}, run.ID, agent.ErrForbidden, "agent: forbidden: mallory may not cancel run " + run.ID},
		{agent.Actor{}, run.ID, agent.ErrForbidden, "agent: forbidden:  may not cancel run " + run.ID},
		{agent.Actor{ID: "nobody"}, "run_missing", agent.ErrNotFound, "sqlstore: reading run run_missing: agent: run not found"},
	} {
		if err := b.rt.Cancel(ctx, tc.by, tc.id); !errors.Is(err, tc.is) || err.Error() != tc.want {
			t.Errorf("Cancel of %s by %q = %v; want %q", tc.id, tc.by.ID, err, tc.want)
		}
	}
	if got, err := b.store.RunGet(ctx, run.ID); err != nil || got.Status != agent.StatusQueued {
		t.Fatalf("after refused cancels the run is %+v, %v; want queued", got, err)
	}
	if err := b.rt.Cancel(ctx, agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	for _, by := range []agent.Actor{{ID: "alice"}, {ID: "root", Admin: true}} {
		if err := b.rt.Cancel(ctx, by, run.ID); !errors.Is(err, agent.ErrFinished) || err.Error() != "agent: run already finished: run "+run.ID {
			t.Errorf("a second Cancel by %s = %v; want ErrFinished", by.ID, err)
		}
	}
	// A stranger is refused as a stranger, finished run or not.
	if err := b.rt.Cancel(ctx, agent.Actor{ID: "mallory"}, run.ID); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("Cancel of a finished run by a stranger = %v; want ErrForbidden", err)
	}
}
