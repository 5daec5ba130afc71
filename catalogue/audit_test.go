package catalogue_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// Every call of a tool is one audit row, whatever the transport (here the
// stdio framing, which egress never sees): the run, the server, the call
// as an approval names it, the outcome and why — and never the arguments.
func TestEveryToolCallIsAnAuditRow(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	log := audit.New(st, make([]byte, audit.MinKeySize))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{Audit: log})
	f.tool("mcp_s_slow") // import first: listing is no call

	inRun := func(ctx context.Context, step int) context.Context {
		ctx = agent.WithRunID(ctx, "run_1")
		return agent.WithCall(ctx, agent.CallRef{RunID: "run_1", Step: step, Call: 1, Tool: "mcp_s_x", ArgsDigest: "sha256:ab"})
	}
	ctx := context.Background()
	f.call(inRun(ctx, 1), "mcp_s_echo", `{"text":"s3cr3t-argument"}`)
	f.call(inRun(ctx, 2), "mcp_s_fail", `{"message":"no"}`)
	cctx, cancel := context.WithCancelCause(inRun(ctx, 3))
	go func() {
		f.srv.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		cancel(agent.ErrRunCancelled)
	}()
	f.call(cctx, "mcp_s_slow", `{"ms":60000}`)
	dctx, dcancel := context.WithDeadlineCause(inRun(ctx, 4), time.Now().Add(50*time.Millisecond), agent.ErrRunDeadline)
	defer dcancel()
	f.call(dctx, "mcp_s_slow", `{"ms":60000}`)
	f.call(ctx, "mcp_s_echo", `{"text":"outside a run"}`)

	rows, err := log.List(ctx, audit.Query{Action: audit.ActionToolCall})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		run, path, reason string
		ok                bool
	}
	want := []seen{
		{"run_1", "mcp_s_x step=1 call=1 args=sha256:ab", "ok", true},
		{"run_1", "mcp_s_x step=2 call=1 args=sha256:ab", "tool error", false},
		{"run_1", "mcp_s_x step=3 call=1 args=sha256:ab", "cancelled: run cancelled", false},
		{"run_1", "mcp_s_x step=4 call=1 args=sha256:ab", "timed out: run deadline", false},
		{"", "mcp_s_echo args=" + agent.ArgsDigest([]byte(`{"text":"outside a run"}`)), "ok", true},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d tool_call rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		got := seen{r.RunID, r.Path, r.Reason, r.OK}
		if got != want[i] || r.Host != "s" {
			t.Errorf("row %d = %+v (host %q), want %+v on server s", i, got, r.Host, want[i])
		}
		if strings.Contains(r.Path+r.Reason+r.Purpose, "s3cr3t") {
			t.Errorf("row %d holds the call's arguments: %+v", i, r)
		}
	}
	if _, err := log.Verify(ctx); err != nil {
		t.Errorf("the chain does not verify: %v", err)
	}
}

// A tool's budget passing is a failure of the call, not a cancellation.
func TestAToolCallsBudgetIsAuditedAsATimeout(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	log := audit.New(st, make([]byte, audit.MinKeySize))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, Budget: catalogue.Budget{Timeout: 50 * time.Millisecond}}}, nil,
		&catalogue.Options{Audit: log})
	f.tool("mcp_s_slow")
	f.call(context.Background(), "mcp_s_slow", `{"ms":60000}`)
	rows, err := log.List(context.Background(), audit.Query{Action: audit.ActionToolCall})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Reason != "timed out: budget" || rows[0].OK {
		t.Errorf("rows = %+v, want one timed out: budget", rows)
	}
}

// A disabled tool sends nothing and writes no row; a row that cannot be
// written does not fail the call.
func TestAToolCallWhoseRowFailsStillAnswers(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{Audit: failingAuditor{}})
	res, err := f.call(context.Background(), "mcp_s_echo", `{"text":"hi"}`)
	wantResult(t, res, err, agent.OutcomeOK, "hi")
	if !f.logs.has("catalogue: auditing a tool call failed") {
		t.Error("the failed audit row was not logged")
	}
}

type failingAuditor struct{}

func (failingAuditor) Record(context.Context, audit.Entry) (audit.Row, error) {
	return audit.Row{}, errors.New("the audit store is gone")
}

// What became of a cancelled call is told, by server, and is an audit row
// beside the call's: a result that came anyway, or nothing heard.
func TestACancelsOutcomeIsAnAuditRow(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	log := audit.New(st, make([]byte, audit.MinKeySize))
	told := make(chan string, 4)
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{Audit: log,
		Client:          &mcp.ClientOptions{CancelOutcomeWindow: 200 * time.Millisecond},
		OnCancelOutcome: func(server string, o mcp.CancelOutcome) { told <- server + " " + string(o) }})
	f.tool("mcp_s_late")
	ctx := context.Background()
	for step, tool := range []string{"late", "slow"} {
		cctx, cancel := context.WithCancelCause(agent.WithCall(agent.WithRunID(ctx, "run_1"),
			agent.CallRef{RunID: "run_1", Step: step + 1, Call: 1, Tool: "mcp_s_" + tool, ArgsDigest: "sha256:ab"}))
		go func() {
			f.srv.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == tool })
			cancel(agent.ErrRunCancelled)
		}()
		f.call(cctx, "mcp_s_"+tool, `{"ms":60000}`)
		want := map[string]string{"late": "s completed_anyway", "slow": "s unconfirmed"}[tool]
		select {
		case got := <-told:
			if got != want {
				t.Errorf("%s: told %q, want %q", tool, got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no outcome told", tool)
		}
	}
	var rows []audit.Row
	for deadline := time.Now().Add(30 * time.Second); len(rows) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if rows, err = log.List(ctx, audit.Query{Action: audit.ActionCancelOutcome}); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d cancel_outcome rows, want 2", len(rows))
	}
	byStep := map[string]audit.Row{}
	for _, r := range rows {
		byStep[r.Path] = r
	}
	for path, want := range map[string]string{"mcp_s_late step=1 call=1 args=sha256:ab": "completed_anyway", "mcp_s_slow step=2 call=1 args=sha256:ab": "unconfirmed"} {
		r, ok := byStep[path]
		if !ok || r.Reason != want || r.RunID != "run_1" || r.Host != "s" || r.OK != (want != "completed_anyway") {
			t.Errorf("row for %s: %+v, want reason %s", path, r, want)
		}
	}
}
