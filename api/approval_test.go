package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// reusedIDScript asks for echo twice with one id, as a provider that
// numbers calls per response does.
const reusedIDScript = `{"steps":[
	{"tool_calls":[{"name":"mcp_test_echo","arguments":{"text":"staging"},"id":"call_0"}]},
	{"tool_calls":[{"name":"mcp_test_echo","arguments":{"text":"production"},"id":"call_0"}]},
	{"text":"done"}]}`

// pendingOnTheWire reads GET /v1/runs/{id} as JSON and returns its
// run.pending object, as a client sees it.
func (f *fixture) pendingOnTheWire(id string) map[string]any {
	f.t.Helper()
	status, _, body := f.raw("GET", "/v1/runs/"+id, "")
	if status != http.StatusOK {
		f.t.Fatalf("GET /v1/runs/%s: %d %s", id, status, body)
	}
	var d struct {
		Run struct {
			Pending map[string]any `json:"pending"`
		} `json:"run"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		f.t.Fatal(err)
	}
	return d.Run.Pending
}

// echoTexts returns the text of every tools/call the MCP server received.
func (f *fixture) echoTexts() []string {
	var texts []string
	for _, rec := range f.mcp.ReceivedMessages("tools/call") {
		var p struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		json.Unmarshal(rec.Params, &p)
		texts = append(texts, p.Arguments.Text)
	}
	return texts
}

// The run's detail shows the call it waits on — tool, arguments, digest —
// and an approval that names another call is a conflict; the production
// call that reuses the staging call's id waits for its own decision.
func TestTheApprovalPromptShowsTheCallAndTheDecisionNamesIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true, audit: true})
	ctx := context.Background()
	run := f.create(reusedIDScript)
	f.waitStatus(run.ID, agent.StatusWaitingForApproval)
	staging := agent.ArgsDigest(json.RawMessage(`{"text":"staging"}`))
	p := f.pendingOnTheWire(run.ID)
	args, _ := json.Marshal(p["args"])
	if p["tool"] != "mcp_test_echo" || string(args) != `{"text":"staging"}` || p["args_digest"] != staging ||
		p["call_id"] != "call_0" || p["step"] != float64(1) || p["call"] != float64(1) || p["four_eyes"] != false {
		t.Fatalf("run.pending = %v; want mcp_test_echo {\"text\":\"staging\"}, its digest, call_0, step 1, call 1, no four eyes", p)
	}

	wrong := `{"step":1,"call":1,"tool":"mcp_test_echo","args_digest":"` + agent.ArgsDigest(json.RawMessage(`{"text":"Staging"}`)) + `"}`
	status, _, body := f.raw("POST", "/v1/runs/"+run.ID+"/approve", wrong)
	if status != http.StatusConflict || !strings.Contains(string(body), `"conflict"`) {
		t.Fatalf("approving a call the run does not wait on: %d %s; want 409 conflict", status, body)
	}
	status, _, body = f.raw("POST", "/v1/runs/"+run.ID+"/approve", `{"step":"one"}`)
	if status != http.StatusBadRequest {
		t.Fatalf("approving with a malformed call: %d %s; want 400", status, body)
	}
	if got := f.echoTexts(); len(got) != 0 {
		t.Fatalf("refused approvals let calls through: %q", got)
	}
	right := `{"step":1,"call":1,"tool":"mcp_test_echo","args_digest":"` + staging + `"}`
	if status, _, body := f.raw("POST", "/v1/runs/"+run.ID+"/approve", right); status != http.StatusOK {
		t.Fatalf("approving the call it waits on: %d %s", status, body)
	}

	d := f.waitStatus(run.ID, agent.StatusWaitingForApproval)
	production := agent.ArgsDigest(json.RawMessage(`{"text":"production"}`))
	if d.Run.Pending == nil || agent.ArgsDigest(d.Run.Pending.Args) != production || d.Run.Pending.ArgsDigest != production || d.Run.Pending.CallID != "call_0" {
		t.Fatalf("the second pending call = %+v; want the production call, id call_0", d.Run.Pending)
	}
	if got := f.echoTexts(); !slices.Equal(got, []string{"staging"}) {
		t.Fatalf("the server received %q; want staging only: production waits for its own approval", got)
	}
	if _, err := f.client.Decide(ctx, run.ID, false); err != nil {
		t.Fatal(err)
	}
	d = f.waitStatus(run.ID, agent.StatusCompleted)
	if got := f.echoTexts(); !slices.Equal(got, []string{"staging"}) {
		t.Fatalf("the server received %q; the denied production call went out", got)
	}
	if len(d.Approvals) != 2 || !d.Approvals[0].Approved || d.Approvals[0].ArgsDigest != staging || d.Approvals[0].By != "local" ||
		d.Approvals[1].Approved || d.Approvals[1].Step <= d.Approvals[0].Step || d.Approvals[1].ArgsDigest != production {
		t.Errorf("approvals = %+v; want staging approved, then production denied, each by local", d.Approvals)
	}
	var rows []string
	for _, a := range d.Audit {
		rows = append(rows, a.Action+" "+a.Purpose+" "+a.Reason)
	}
	if want := []string{"call_approved by local approved", "call_denied by local denied"}; !slices.Equal(rows, want) {
		t.Errorf("the run's audit rows = %q, want %q", rows, want)
	}
}

// Under four eyes, the owner's approval is forbidden, with its own audit
// row (not an api_denied one); another admin may approve; an admin owner's
// approval is an override, and its row says so.
func TestFourEyesOverTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true, tokens: true, fourEyes: true})
	ctx := context.Background()
	alice := f.as(f.token("alice", token.RoleOperator))
	mine, err := alice.CreateRun(ctx, &agent.Request{Prompt: "test", Script: json.RawMessage(echoScript)})
	if err != nil {
		t.Fatal(err)
	}
	d := f.waitStatus(mine.ID, agent.StatusWaitingForApproval)
	if d.Run.Pending == nil || !d.Run.Pending.FourEyes {
		t.Fatalf("pending = %+v; want it to say four eyes", d.Run.Pending)
	}
	_, err = alice.Decide(ctx, mine.ID, true)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	if !strings.Contains(err.Error(), "four eyes") {
		t.Errorf("the refusal says %q; want it to say four eyes", err)
	}
	if n := len(f.denials()); n != 0 {
		t.Errorf("%d api_denied rows; the refusal is audited once, as call_approval_refused", n)
	}
	if got := f.echoTexts(); len(got) != 0 {
		t.Fatalf("a refused approval let the call through: %q", got)
	}
	if _, err := f.client.Decide(ctx, mine.ID, true); err != nil { // root, an admin
		t.Fatalf("another admin's approval: %v", err)
	}
	f.waitStatus(mine.ID, agent.StatusCompleted)

	roots := f.create(echoScript) // root's own run
	f.waitStatus(roots.ID, agent.StatusWaitingForApproval)
	if _, err := f.client.Decide(ctx, roots.ID, true); err != nil {
		t.Fatalf("an admin's approval of their own run: %v", err)
	}
	f.waitStatus(roots.ID, agent.StatusCompleted)

	for _, c := range []struct {
		run  string
		want []string
	}{
		{mine.ID, []string{"call_approval_refused by alice four eyes: the run's owner may not approve", "call_approved by root approved"}},
		{roots.ID, []string{"call_approved by root admin override of four eyes"}},
	} {
		rows, err := f.audit.List(ctx, audit.Query{RunID: c.run})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, string(r.Action)+" "+r.Purpose+" "+r.Reason)
			if !strings.HasPrefix(r.Path, "mcp_test_echo step=1 call=1 args=sha256:") || strings.Contains(r.Path, "hello") {
				t.Errorf("row %d names the call as %q; want tool, step, call and digest, never the arguments", r.Seq, r.Path)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("audit rows of run %s = %q, want %q", c.run, got, c.want)
		}
	}
	if got := f.echoTexts(); !slices.Equal(got, []string{"hello", "hello"}) {
		t.Errorf("the server received %q; want the two approved calls", got)
	}
}
