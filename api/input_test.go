package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

const elicitScript = `{"steps":[{"tool_calls":[{"name":"mcp_test_elicit","arguments":{"message":"Who deploys?"}}]},{"text":"done"}]}`

// toolText returns the text of the run's tool step.
func toolText(d *api.RunDetail) string {
	for _, st := range d.Steps {
		if st.Kind == string(agent.StepTool) {
			return st.Text
		}
	}
	return ""
}

// A run waiting for input shows its question; the answer is checked
// against the question's schema (the error names the field, never the
// value), must name the question shown if it names one, may come only from
// the run's owner or an admin, is audited with the fields' names only, and
// reaches the server, and the run goes on.
func TestAQuestionIsShownAndAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{elicit: true, tokens: true})
	alice := f.as(f.token("alice", token.RoleOperator))
	bob := f.as(f.token("bob", token.RoleOperator))
	run, err := alice.CreateRun(context.Background(), &agent.Request{Prompt: "test", Script: json.RawMessage(elicitScript)})
	if err != nil {
		t.Fatal(err)
	}
	d := f.waitStatus(run.ID, agent.StatusWaitingForInput)
	if d.Question == nil { // the question is stored with the status, in one transaction
		t.Fatalf("a run waiting for input shows no question: %+v", d)
	}
	q := d.Question
	if q.Server != "test" || q.Tool != "mcp_test_elicit" || q.Mode != "form" || q.Message != "Who deploys?" ||
		!strings.Contains(string(q.Schema), `"name"`) || q.ExpiresAt.IsZero() {
		t.Fatalf("question = %+v", q)
	}

	status, _, body := f.request("POST", "/v1/runs/"+run.ID+"/answer", "Bearer "+alice.Token, `{"content":{"nom":"s3cret-value"}}`)
	if status != http.StatusBadRequest || strings.Contains(string(body), "s3cret-value") || !strings.Contains(string(body), "required") {
		t.Fatalf("an answer missing a required field: %d %s; want 400 naming the keyword, never the value", status, body)
	}
	if _, err := alice.AnswerRun(context.Background(), run.ID, "q_not_shown", json.RawMessage(`{"name":"Ada"}`)); !isCode(err, "conflict") {
		t.Fatalf("an answer naming another question: %v, want conflict", err)
	}
	if _, err := bob.AnswerRun(context.Background(), run.ID, q.ID, json.RawMessage(`{"name":"Bob"}`)); !isCode(err, "forbidden") {
		t.Fatalf("another operator's answer: %v, want forbidden", err)
	}
	if _, err := alice.AnswerRun(context.Background(), run.ID, q.ID, json.RawMessage(`{"name":"Ada Lovelace"}`)); err != nil {
		t.Fatalf("AnswerRun: %v", err)
	}
	d = f.waitStatus(run.ID, agent.StatusCompleted)
	if got := toolText(d); got != `elicit: accept {"name":"Ada Lovelace"}` {
		t.Fatalf("the tool said %q, want the server's echo of the answer", got)
	}
	if _, err := alice.AnswerRun(context.Background(), run.ID, "", json.RawMessage(`{"name":"again"}`)); !isCode(err, "conflict") {
		t.Fatalf("answering a finished run: %v, want conflict", err)
	}
	rows, err := f.audit.List(context.Background(), audit.Query{RunID: run.ID, Action: audit.ActionInputAnswered})
	if err != nil || len(rows) != 1 {
		t.Fatalf("input_answered rows = %v, %v; want one", rows, err)
	}
	if r := rows[0]; r.Purpose != "by alice" || !strings.Contains(r.Path, "fields=name") || strings.Contains(r.Path, "Ada") {
		t.Fatalf("audit row = %+v; want by alice, naming the field, not its value", r)
	}
}

// A declined question tells the server "decline", and the run goes on.
func TestAQuestionIsDeclined(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{elicit: true})
	run := f.create(elicitScript)
	d := f.waitStatus(run.ID, agent.StatusWaitingForInput)
	status, _, body := f.raw("POST", "/v1/runs/"+run.ID+"/decline", `{"question":"`+d.Question.ID+`","content":{"name":"x"}}`)
	if status != http.StatusBadRequest {
		t.Fatalf("a decline with content: %d %s, want 400", status, body)
	}
	if _, err := f.client.DeclineRun(context.Background(), run.ID, d.Question.ID); err != nil {
		t.Fatalf("DeclineRun: %v", err)
	}
	d = f.waitStatus(run.ID, agent.StatusCompleted)
	if got := toolText(d); got != "elicit: decline" {
		t.Fatalf("the tool said %q, want decline", got)
	}
	if d.Question != nil {
		t.Fatalf("a finished run still shows a question: %+v", d.Question)
	}
}

func isCode(err error, code string) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == code
}
