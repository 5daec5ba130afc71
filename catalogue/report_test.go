package catalogue_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// OnCall is told of every call once it has ended, with its server and how
// it ended: ok, error, cancelled, timed out, failed with an error.
func TestOnCallReportsEveryCall(t *testing.T) {
	var mu sync.Mutex
	var got []catalogue.CallReport
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{
		Client: &mcp.ClientOptions{RequestTimeout: 5 * time.Second},
		OnCall: func(r catalogue.CallReport) {
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
		},
	})
	f.tool("mcp_s_slow") // import first: listing is no call

	ctx := context.Background()
	f.call(ctx, "mcp_s_echo", `{"text":"hello"}`)
	f.call(ctx, "mcp_s_fail", `{"message":"no"}`)
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		f.srv.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		cancel()
	}()
	f.call(cctx, "mcp_s_slow", `{"ms":60000}`)
	tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer tcancel()
	f.call(tctx, "mcp_s_slow", `{"ms":60000}`)
	if _, err := f.call(ctx, "mcp_s_bad_result", ""); err == nil {
		t.Fatal("a malformed result is not an error")
	}

	type seen struct {
		server, tool string
		outcome      agent.Outcome
		timedOut     bool
	}
	want := []seen{
		{"s", "mcp_s_echo", agent.OutcomeOK, false},
		{"s", "mcp_s_fail", agent.OutcomeError, false},
		{"s", "mcp_s_slow", agent.OutcomeCancelled, false},
		{"s", "mcp_s_slow", agent.OutcomeFailed, true},
		{"s", "mcp_s_bad_result", agent.OutcomeFailed, false},
	}
	mu.Lock()
	defer mu.Unlock()
	var have []seen
	for _, r := range got {
		have = append(have, seen{r.Server, r.Tool, r.Outcome, r.TimedOut})
		if r.Took <= 0 {
			t.Errorf("%s: Took = %v, want > 0", r.Tool, r.Took)
		}
	}
	if !slices.Equal(have, want) {
		t.Errorf("OnCall reports:\n got %v\nwant %v", have, want)
	}
}

// A tool an operator has disabled is not called, and OnCall is not told.
func TestOnCallIsNotToldOfADisabledTool(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	var told []string
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{
		Settings: st,
		OnCall:   func(r catalogue.CallReport) { told = append(told, r.Tool+" "+string(r.Outcome)) },
	})
	f.tool("mcp_s_echo") // import first
	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)})
	res, err := f.call(context.Background(), "mcp_s_echo", `{"text":"hi"}`)
	wantResult(t, res, err, agent.OutcomeFailed, "disabled by an operator")
	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(true)})
	res, err = f.call(context.Background(), "mcp_s_echo", `{"text":"back"}`)
	wantResult(t, res, err, agent.OutcomeOK, "back")
	if want := []string{"mcp_s_echo ok"}; !slices.Equal(told, want) {
		t.Errorf("OnCall was told %v, want %v", told, want)
	}
}
