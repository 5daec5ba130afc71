package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

// askingTool asks the operator for a name and returns the answer.
func askingTool(b *testBundle, name string) *testTool {
	return b.tools.add(&testTool{name: name, effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		ans, err := agent.Ask(ctx, &agent.Question{Server: "forms", Message: "Name?", Schema: nameSchema})
		if err != nil {
			return nil, err
		}
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: ans.Action + " " + string(ans.Content)}, nil
	}})
}

// withInputs gives the runtime its store's questions.
func withInputs(c *agent.Config) {
	c.Inputs, c.InputPollInterval = c.Store.(*countingStore).Store, 10*time.Millisecond
}

func (b *testBundle) pending(id string) *agent.InputRequest {
	b.t.Helper()
	b.waitStatus(id, agent.StatusWaitingForInput)
	q, err := b.store.Store.InputPending(context.Background(), id)
	if err != nil || q == nil {
		b.t.Fatalf("InputPending(%s) = %v, %v", id, q, err)
	}
	return q
}

func toolStepText(steps []*agent.Step) string {
	for _, s := range steps {
		if s.Kind == agent.StepTool {
			return s.Text
		}
	}
	return ""
}

// The serve/worker split: a question asked by a run on one runtime (the
// worker holding the call) is answered through another runtime on the
// same database (the API's, which executes nothing); the holder reads the
// answer from the store, and the run goes on with it.
func TestAnAnswerFromAnotherProcessReachesTheHolder(t *testing.T) {
	worker := setup(t, withInputs)
	st := worker.store.Store
	askingTool(worker, "ask")
	api, err := agent.New(agent.Config{Store: st, Inputs: st, Tools: worker.tools, NewModel: newStepModel, ResumeElsewhere: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	worker.start()
	run := worker.submit("alice", turn{Calls: []string{"ask"}}, turn{Final: "done"})
	q := worker.pending(run.ID)
	if q.Server != "forms" || q.Tool != "ask" || q.Message != "Name?" {
		t.Fatalf("question = %+v", q)
	}
	if err := api.Answer(context.Background(), agent.Actor{ID: "alice"}, agent.Reply{RunID: run.ID, Question: q.ID, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
		t.Fatalf("Answer through the other runtime: %v", err)
	}
	worker.waitStatus(run.ID, agent.StatusCompleted)
	if got := toolStepText(worker.steps(run.ID)); got != `accept {"name":"Ada"}` {
		t.Fatalf("the tool got %q", got)
	}
}

// A runtime without an InputStore asks nobody: Ask says ErrNoOperator, and
// Reply refuses.
func TestNoInputStoreNoQuestions(t *testing.T) {
	b := setup(t, nil)
	b.tools.add(&testTool{name: "ask", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		_, err := agent.Ask(ctx, &agent.Question{Server: "forms", Message: "Name?"})
		if !errors.Is(err, agent.ErrNoOperator) {
			return nil, err
		}
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "nobody to ask"}, nil
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"ask"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if got := toolStepText(b.steps(run.ID)); got != "nobody to ask" {
		t.Fatalf("the tool said %q", got)
	}
	if err := b.rt.Decline(context.Background(), agent.Actor{ID: "alice"}, run.ID); !errors.Is(err, agent.ErrNotWaitingForInput) {
		t.Fatalf("Decline on a runtime without an InputStore: %v", err)
	}
}

// No question outlives its tool call: a tool that returns while the
// question its server asked still waits (as a handshake-era elicitation,
// answered on a goroutine of the client's, may) does not leave its run
// waiting for input with nobody holding it. The question ends cancelled,
// and the run records its steps and goes on.
func TestAQuestionEndsWithItsCall(t *testing.T) {
	b := setup(t, withInputs)
	st := b.store.Store
	asked := make(chan *agent.Answer, 1)
	b.tools.add(&testTool{name: "ask", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		go func() {
			ans, _ := agent.Ask(ctx, &agent.Question{Server: "forms", Message: "Name?", Schema: nameSchema})
			asked <- ans
		}()
		// Return once the question is out, without waiting for it.
		for {
			run, err := st.RunGet(ctx, agent.RunIDFrom(ctx))
			if err != nil {
				return nil, err
			}
			if run.Status == agent.StatusWaitingForInput {
				return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "returned early"}, nil
			}
			time.Sleep(2 * time.Millisecond)
		}
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"ask"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if ans := <-asked; ans == nil || ans.Action != agent.ActionCancel {
		t.Fatalf("the server of a question whose call returned was told %+v, want cancel", ans)
	}
	qs, err := st.InputList(context.Background(), run.ID)
	if err != nil || len(qs) != 1 || qs[0].Status != agent.InputCancelled {
		t.Fatalf("questions = %v, %v; want one, cancelled", qs, err)
	}
	if !strings.Contains(toolStepText(b.steps(run.ID)), "returned early") {
		t.Fatalf("steps = %v", b.steps(run.ID))
	}
	// The question ended before the call's step was recorded: the run
	// never went on while it still waited.
	var kinds []string
	for _, s := range b.steps(run.ID) {
		kinds = append(kinds, string(s.Kind))
	}
	if got := strings.Join(kinds, ","); got != "model,input,tool,model" {
		t.Fatalf("steps in order: %s; want the question's step before the call's", got)
	}
}

// A server's log messages become steps of the run — at most MaxServerLogs
// of them, then one step saying the rest are left out — cut to
// MaxServerLogText bytes; outside a run's tool call nothing is recorded.
func TestServerLogsAreCappedPerRun(t *testing.T) {
	b := setup(t, nil)
	if agent.RecordServerLog(context.Background(), agent.ServerLog{Server: "s", Level: "info", Text: "nobody's"}) {
		t.Fatal("a log message outside a tool call was recorded")
	}
	long := strings.Repeat("x", agent.MaxServerLogText+100)
	b.tools.add(&testTool{name: "chatty", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		for i := range agent.MaxServerLogs + 5 {
			text := "message"
			if i == 0 {
				text = long
			}
			agent.RecordServerLog(ctx, agent.ServerLog{Server: "s", Level: "warning", Logger: "l", Text: text})
		}
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, nil
	}})
	b.start()
	// Two calls in one run: the cap is the run's, not the call's.
	run := b.submit("alice", turn{Calls: []string{"chatty"}}, turn{Calls: []string{"chatty"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	var logs []*agent.Step
	for _, s := range b.steps(run.ID) {
		if s.Kind == agent.StepLog {
			logs = append(logs, s)
		}
	}
	if len(logs) != agent.MaxServerLogs+1 {
		t.Fatalf("%d log steps, want %d and the note", len(logs), agent.MaxServerLogs)
	}
	if len(logs[0].Text) > agent.MaxServerLogText+len("…") || !strings.HasPrefix(logs[0].Text, "xxx") {
		t.Fatalf("the first log step holds %d bytes, want at most %d", len(logs[0].Text), agent.MaxServerLogText)
	}
	if last := logs[len(logs)-1]; !strings.Contains(last.Text, "the rest are left out") {
		t.Fatalf("the last log step = %q, want the note", last.Text)
	}
	if !strings.Contains(string(logs[1].Args), `"level":"warning"`) || logs[1].Tool != "chatty" {
		t.Fatalf("log step = %+v", logs[1])
	}
}
