package catalogue_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/sqlstore"
)

// elicitBundle is a runtime on a real SQLite store whose tools are a
// catalogue of one mcptest server that elicits.
type elicitBundle struct {
	t     *testing.T
	f     *fixture
	store *sqlstore.Store
	rt    *agent.Runtime
}

func newElicitBundle(t *testing.T, protocol string, timeout time.Duration, adjust ...func(*catalogue.Server)) *elicitBundle {
	t.Helper()
	srv := catalogue.Server{Name: "s", Command: stdio, Protocol: protocol, RequiresApproval: ptr(false)}
	if timeout > 0 {
		srv.Budget.Timeout = timeout
	}
	for _, f := range adjust {
		f(&srv)
	}
	f := newFixture(t, []catalogue.Server{srv}, &mcptest.Options{Elicit: true}, &catalogue.Options{Elicitation: true})
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := agent.New(agent.Config{Store: st, Inputs: st, Tools: f.cat, ClaimInterval: 5 * time.Millisecond,
		WatchInterval: 20 * time.Millisecond, InputPollInterval: 20 * time.Millisecond,
		NewModel: func(_ context.Context, req *agent.Request) (model.Model, error) {
			s, err := script.Parse(req.Script)
			if err != nil {
				return nil, err
			}
			return script.New(s)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; rt.Close() })
	return &elicitBundle{t: t, f: f, store: st, rt: rt}
}

// submit starts a run that calls the elicit tool with args, then ends.
func (b *elicitBundle) submit(args string) *agent.Run {
	b.t.Helper()
	sc := `{"steps":[{"tool_calls":[{"name":"mcp_s_elicit","arguments":` + args + `}]},{"text":"done"}]}`
	run, err := b.rt.Submit(context.Background(), "alice", &agent.Request{Prompt: "ask", Script: json.RawMessage(sc)})
	if err != nil {
		b.t.Fatal(err)
	}
	return run
}

// waitStatus waits for the run to reach want (the deadline only keeps a
// broken test from hanging).
func (b *elicitBundle) waitStatus(id string, want agent.Status) *agent.Run {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run, err := b.store.RunGet(context.Background(), id)
		if err != nil {
			b.t.Fatal(err)
		}
		if run.Status == want {
			return run
		}
		if run.Status.Terminal() || time.Now().After(deadline) {
			b.t.Fatalf("run %s is %s (%s %q), want %s", id, run.Status, run.Reason, run.Error, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// question waits for the run to wait for input and returns its question.
func (b *elicitBundle) question(id string) *agent.InputRequest {
	b.t.Helper()
	b.waitStatus(id, agent.StatusWaitingForInput)
	q, err := b.store.InputPending(context.Background(), id)
	if err != nil || q == nil {
		b.t.Fatalf("InputPending(%s) = %v, %v", id, q, err)
	}
	return q
}

// toolStep returns the text of the run's tool step of the elicit tool.
func (b *elicitBundle) steps(id string) []*agent.Step {
	b.t.Helper()
	steps, err := b.store.StepList(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return steps
}

func stepOf(steps []*agent.Step, kind agent.StepKind) *agent.Step {
	for _, s := range steps {
		if s.Kind == kind {
			return s
		}
	}
	return nil
}

// answers returns what the server was told, in order: the ElicitResults.
func answers(srv *mcptest.Server) []map[string]any {
	var out []map[string]any
	for _, r := range srv.Records() {
		if r.Kind == mcptest.ElicitAnswered {
			var m map[string]any
			json.Unmarshal(r.Params, &m)
			out = append(out, m)
		}
	}
	return out
}

var elicitRevisions = []string{"2025-11-25", "2026-07-28"}

// A server's question reaches the operator with its schema; the answer,
// checked against the schema, reaches the server; the run goes on with it.
func TestElicitationAnsweredByTheOperator(t *testing.T) {
	for _, rev := range elicitRevisions {
		t.Run(rev, func(t *testing.T) {
			b := newElicitBundle(t, rev, 0)
			run := b.submit(`{"message":"Who are you?"}`)
			q := b.question(run.ID)
			if q.Server != "s" || q.Tool != "mcp_s_elicit" || q.Mode != agent.InputForm || q.Message != "Who are you?" ||
				!strings.Contains(string(q.Schema), `"required":["name"]`) || q.ExpiresAt.IsZero() {
				t.Fatalf("question = %+v", q)
			}
			alice := agent.Actor{ID: "alice"}
			err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"nom":"hunter2"}`)})
			if !errors.Is(err, agent.ErrInvalidAnswer) || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "required") {
				t.Fatalf("an answer without the required field: %v; want ErrInvalidAnswer naming the keyword, never the value", err)
			}
			if err := b.rt.Answer(context.Background(), agent.Actor{ID: "mallory"}, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"name":"x"}`)}); !errors.Is(err, agent.ErrForbidden) {
				t.Fatalf("another owner's answer: %v, want ErrForbidden", err)
			}
			if err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID, Question: q.ID, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			b.waitStatus(run.ID, agent.StatusCompleted)
			steps := b.steps(run.ID)
			tool := stepOf(steps, agent.StepTool)
			if tool == nil || tool.Outcome != agent.OutcomeOK || tool.Text != `elicit: accept {"name":"Ada"}` {
				t.Fatalf("tool step = %+v, want the server's echo of the answer", tool)
			}
			in := stepOf(steps, agent.StepInput)
			if in == nil || in.Outcome != agent.OutcomeOK || !strings.Contains(in.Text, "fields: name") || strings.Contains(in.Text, "Ada") {
				t.Fatalf("input step = %+v, want it to name the field, not the value", in)
			}
			got := answers(b.f.srv)
			if len(got) != 1 || got[0]["action"] != "accept" {
				t.Fatalf("the server was told %v, want one accept", got)
			}
			if q, _ := b.store.InputGet(context.Background(), q.ID); q.Status != agent.InputAccepted || q.Content != nil || q.By != "alice" {
				t.Fatalf("stored question after the run = %+v, want accepted by alice, its content gone", q)
			}
		})
	}
}

// A declined question tells the server "decline", and the run goes on.
func TestElicitationDeclined(t *testing.T) {
	for _, rev := range elicitRevisions {
		t.Run(rev, func(t *testing.T) {
			b := newElicitBundle(t, rev, 0)
			run := b.submit(`{}`)
			b.question(run.ID)
			if err := b.rt.Decline(context.Background(), agent.Actor{ID: "root", Admin: true}, run.ID); err != nil {
				t.Fatalf("Decline: %v", err)
			}
			b.waitStatus(run.ID, agent.StatusCompleted)
			if tool := stepOf(b.steps(run.ID), agent.StepTool); tool == nil || tool.Text != "elicit: decline" {
				t.Fatalf("tool step = %+v", tool)
			}
			if got := answers(b.f.srv); len(got) != 1 || got[0]["action"] != "decline" {
				t.Fatalf("the server was told %v, want one decline", got)
			}
		})
	}
}

// A run cancelled while it waits for input ends cancelled, and the server
// is told as its revision defines: on handshake-era revisions the question
// is answered "cancel" and the call is cancelled (notifications/cancelled);
// on 2026-07-28 the call is abandoned — no retry carries an answer.
func TestElicitationCancelledWhileWaiting(t *testing.T) {
	for _, rev := range elicitRevisions {
		t.Run(rev, func(t *testing.T) {
			b := newElicitBundle(t, rev, 0)
			run := b.submit(`{}`)
			q := b.question(run.ID)
			if err := b.rt.Cancel(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			b.waitStatus(run.ID, agent.StatusCancelled)
			// The segment records the steps it had in flight, then stops.
			deadline := time.Now().Add(30 * time.Second)
			for (stepOf(b.steps(run.ID), agent.StepTool) == nil || stepOf(b.steps(run.ID), agent.StepInput) == nil) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if tool := stepOf(b.steps(run.ID), agent.StepTool); tool == nil || tool.Outcome != agent.OutcomeCancelled {
				t.Fatalf("tool step = %+v, want cancelled", tool)
			}
			if in := stepOf(b.steps(run.ID), agent.StepInput); in == nil || in.Outcome != agent.OutcomeCancelled {
				t.Fatalf("input step = %+v, want cancelled", in)
			}
			if got, _ := b.store.InputGet(context.Background(), q.ID); got.Status != agent.InputCancelled {
				t.Fatalf("question = %s, want cancelled", got.Status)
			}
			if err := b.rt.Answer(context.Background(), agent.Actor{ID: "alice"}, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"name":"late"}`)}); !errors.Is(err, agent.ErrFinished) {
				t.Fatalf("answering a cancelled run: %v, want ErrFinished", err)
			}
			if rev == "2026-07-28" {
				calls := toolCalls(b.f.srv.ReceivedMessages("tools/call"), "elicit")
				if len(calls) != 1 || answers(b.f.srv) != nil {
					t.Fatalf("the server got %d tools/call and answers %v; want the first call only, no retry", len(calls), answers(b.f.srv))
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := b.f.srv.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ElicitAnswered }); err != nil {
				t.Fatalf("the server never heard of its question: %v", err)
			}
			if got := answers(b.f.srv); len(got) != 1 || got[0]["action"] != "cancel" {
				t.Fatalf("the server was told %v, want cancel", got)
			}
			if _, err := b.f.srv.WaitFor(ctx, func(r mcptest.Record) bool {
				return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
			}); err != nil {
				t.Fatalf("the tool call was not cancelled on the wire: %v", err)
			}
		})
	}
}

// A question nobody answers expires with the call's budget: the server is
// told "cancel", the call fails as timed out, and the run goes on.
func TestElicitationExpiresWithTheCallsBudget(t *testing.T) {
	b := newElicitBundle(t, "2025-11-25", 3*time.Second) // generous: the question must be asked before it passes
	run := b.submit(`{}`)
	b.waitStatus(run.ID, agent.StatusCompleted)
	in := stepOf(b.steps(run.ID), agent.StepInput)
	if in == nil || in.Outcome != agent.OutcomeFailed || !strings.Contains(in.Text, "Expired") {
		t.Fatalf("input step = %+v, want expired", in)
	}
	qs, err := b.store.InputList(context.Background(), run.ID)
	if err != nil || len(qs) != 1 || qs[0].Status != agent.InputExpired {
		t.Fatalf("questions = %v, %v; want one, expired", qs, err)
	}
}

// A url question is stored with its URL, takes no values, and accepting it
// tells the server accept, with no content.
func TestElicitationURLMode(t *testing.T) {
	b := newElicitBundle(t, "2025-11-25", 0)
	run := b.submit(`{"mode":"url","url":"https://auth.example/connect?state=abc","message":"Connect your account"}`)
	q := b.question(run.ID)
	if q.Mode != agent.InputURL || q.URL != "https://auth.example/connect?state=abc" || q.Message != "Connect your account" || q.Schema != nil {
		t.Fatalf("question = %+v", q)
	}
	alice := agent.Actor{ID: "alice"}
	if err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"code":"x"}`)}); !errors.Is(err, agent.ErrInvalidAnswer) {
		t.Fatalf("values for a url question: %v, want ErrInvalidAnswer", err)
	}
	if err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID}); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if got := answers(b.f.srv); len(got) != 1 || got[0]["action"] != "accept" || got[0]["content"] != nil {
		t.Fatalf("the server was told %v, want accept without content", got)
	}
}
