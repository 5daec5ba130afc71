package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
)

// deepRunBody is a run request whose one tool call's arguments nest
// arrays depth deep: the arguments object sits 7 levels into the request
// (request, script, steps, step, tool_calls, call, arguments).
func deepRunBody(depth int) string {
	return `{"prompt":"p","script":{"steps":[{"tool_calls":[{"name":"mcp_test_echo","arguments":{"a":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}]},{"text":"done"}]}}`
}

// The nesting amplification: a 10 KB run request of 5,000 nested arrays is
// refused with a message naming the limit, and nothing is stored; one
// nested as deep as the limit allows is taken, and the run, its detail
// and every list are served at less than ten times the request's size (an
// indented answer is about 35 times it: every level re-indented).
func TestNestedRequestsAreRefusedAndServedCompact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	body := deepRunBody(5000)
	if len(body) < 10_000 || len(body) > 11_000 {
		t.Fatalf("the body is %d bytes, want about 10 KB", len(body))
	}
	status, header, resp := f.raw("POST", "/v1/runs", body)
	msg := checkError(t, status, header, resp, http.StatusBadRequest, "bad_request")
	if !strings.Contains(msg, "nested deeper than 64 levels (agent.MaxJSONDepth)") {
		t.Errorf("refusal %q does not name the limit", msg)
	}
	status, header, resp = f.raw("POST", "/v1/runs", deepRunBody(agent.MaxJSONDepth-6))
	checkError(t, status, header, resp, http.StatusBadRequest, "bad_request")
	if runs, err := f.client.ListRuns(context.Background(), agent.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("after the refusals, %d runs are stored (%v)", len(runs), err)
	}

	body = deepRunBody(agent.MaxJSONDepth - 7) // the request nests exactly 64 deep
	status, _, resp = f.raw("POST", "/v1/runs", body)
	if status != http.StatusCreated {
		t.Fatalf("POST at the limit: %d %s", status, resp)
	}
	var run api.Run
	if err := json.Unmarshal(resp, &run); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/runs/" + run.ID, "/v1/runs", "/v1/runs?limit=1000"} {
		status, _, resp := f.raw("GET", path, "")
		if status != http.StatusOK || len(resp) >= 10*len(body) {
			t.Errorf("GET %s: %d, %d bytes for a request of %d: want 200 and under 10×", path, status, len(resp), len(body))
		}
	}
}

// A list shows a run's request only up to 4 KiB, and flags it left out
// beyond (request_omitted), as it does the arguments of the call a run
// waits on (args_omitted); GET /v1/runs/{id} shows both whole. The stream
// of all runs lists them so too, and a run's own stream shows it whole.
func TestListsLeaveLargeValuesOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true})
	ctx := context.Background()
	large := `{"steps":[{"tool_calls":[{"name":"mcp_test_echo","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}]},{"text":"done"}]}`
	small := f.create(finalScript)
	big := f.create(large)
	f.waitStatus(big.ID, agent.StatusWaitingForApproval)

	runs, err := f.client.ListRuns(ctx, agent.RunFilter{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListRuns: %d, %v", len(runs), err)
	}
	for _, r := range runs {
		switch r.ID {
		case small.ID:
			if r.RequestOmitted || len(r.Request) == 0 {
				t.Errorf("the small run is listed with request %q (omitted %v), want it whole", r.Request, r.RequestOmitted)
			}
		case big.ID:
			if !r.RequestOmitted || len(r.Request) != 0 || r.Pending == nil || !r.Pending.ArgsOmitted || len(r.Pending.Args) != 0 {
				t.Errorf("the large run is listed with %d bytes of request (omitted %v), pending %v: want both left out, flagged",
					len(r.Request), r.RequestOmitted, r.Pending != nil && !r.Pending.ArgsOmitted)
			}
		}
	}
	d, err := f.client.GetRun(ctx, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Run.RequestOmitted || len(d.Run.Request) < 5000 || d.Run.Pending == nil || len(d.Run.Pending.Args) < 5000 {
		t.Errorf("the run's detail has %d bytes of request, pending %v: want them whole", len(d.Run.Request), d.Run.Pending != nil)
	}

	all := f.subscribe("")
	for _, id := range []string{small.ID, big.ID} {
		ev := all.saw("run "+id, func(e sseEvent) bool { return e.name == "run" && e.runID(t) == id })
		if got := ev.run(t); got.RequestOmitted != (id == big.ID) {
			t.Errorf("the stream of all runs lists run %s with request_omitted %v", id, got.RequestOmitted)
		}
	}
	one := f.subscribe("?run=" + big.ID)
	ev := one.next("the run", func(e sseEvent) bool { return e.name == "run" })
	if got := ev.run(t); got.RequestOmitted || len(got.Request) < 5000 {
		t.Errorf("the run's own stream shows %d bytes of its request (omitted %v), want it whole", len(got.Request), got.RequestOmitted)
	}
}
