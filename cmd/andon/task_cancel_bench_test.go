package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// BenchmarkRunCancelToTaskCancel is BenchmarkRunCancelToWire for a call
// that became an MCP task: the time from an operator's cancel of the run
// (Runtime.Cancel) to the MCP server receiving tasks/cancel for the call's
// task — mcptest's task_cancel_requested record, stamped when the request
// arrives. The server runs in this process, over a pipe ("pipe") or over
// loopback HTTP ("http"); the run's call is task_wait, which works until
// cancelled. Waiting for the task to exist and for the cancelled step is
// outside the measurement. It reports p50, p99 and max in ms. Run it with
// at least 50 cancels per sub-benchmark:
//
//	go test -run '^$' -bench RunCancelToTaskCancel -benchtime 200x ./cmd/andon/
func BenchmarkRunCancelToTaskCancel(b *testing.B) {
	for _, transport := range []string{"pipe", "http"} {
		for _, rev := range []string{mcp.Version20251125, mcp.Version20260728} {
			b.Run(transport+"/"+rev, func(b *testing.B) { benchTaskCancel(b, transport, rev) })
		}
	}
}

func benchTaskCancel(b *testing.B, transport, rev string) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(b.TempDir(), "andon.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv := mcptest.NewServer(&mcptest.Options{Tasks: true})
	defer srv.Close()
	no := false
	server := catalogue.Server{Name: "bench", RequiresApproval: &no, Protocol: rev}
	var opts catalogue.Options
	switch transport {
	case "pipe":
		server.Command = []string{"unused: dialled in process"}
		opts.Dial = func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil }
	case "http":
		hs := httptest.NewServer(srv.HTTPHandler(nil))
		defer hs.Close()
		server.URL = hs.URL + "/mcp"
	}
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{server}}, &opts)
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	rt, err := agent.New(agent.Config{Store: st, Tools: cat, NewModel: scriptModel})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Run(runCtx)
	}()
	defer func() {
		stop()
		<-done
		rt.Close()
	}()
	records := memRecords{srv}
	work := json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_bench_task_wait","arguments":{"ms":60000}}]},{"text":"done"}]}`)
	seen := map[string]bool{}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		run, err := rt.Submit(ctx, "bench", &agent.Request{Prompt: "bench", Script: work})
		if err != nil {
			b.Fatal(err)
		}
		created := records.wait(b, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated && !seen[r.Task] })
		seen[created.Task] = true
		waitTask(b, st, run.ID)

		t0 := time.Now()
		if err := rt.Cancel(ctx, agent.Actor{ID: "bench", Admin: true}, run.ID); err != nil {
			b.Fatal(err)
		}
		saw := records.wait(b, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == created.Task })
		latencies = append(latencies, saw.At.Sub(t0))
		waitSteps(b, st, run.ID, 2)
	}
	b.StopTimer()
	reportLatencies(b, latencies)
}

// waitTask waits until the run's call has its task persisted.
func waitTask(b *testing.B, st *sqlstore.Store, id string) {
	b.Helper()
	deadline := time.Now().Add(patience)
	for {
		tasks, err := st.TaskList(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if len(tasks) > 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s has no task", id)
		}
		time.Sleep(time.Millisecond)
	}
}

func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(latencies, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
	b.ReportMetric(float64(len(latencies)), "cancels")
}

// BenchmarkTaskCancelAcrossProcesses is BenchmarkCancelAcrossProcesses for
// a call that became an MCP task: `andon serve --workers 0` (A) records
// the cancel, the MCP server is `andon mcptest serve -tasks -http` (its
// own process, stamping its records with the wall clock), and the clock
// runs from just before POST /v1/runs/{id}/cancel to A until the server
// receives tasks/cancel for the task.
//
// holder: `andon worker` (B) holds the call; the cancel goes A → the
// database (NOTIFY on PostgreSQL, River's job cancel on SQLite) → B's
// watcher → B's MCP client's tasks/cancel. Each iteration waits a random
// 0–100 ms (untimed) before it cancels, as the other benchmark does.
//
// no-holder: the worker died; the run's lease has lapsed and its task is
// persisted. A sends tasks/cancel itself, with the persisted id, through
// its own MCP client (connected to the server under the task's revision).
// Each iteration starts the task from the benchmark's own client and
// writes the run as a dead worker left it (untimed).
//
//	go test -run '^$' -bench TaskCancelAcrossProcesses -benchtime 100x ./cmd/andon/
func BenchmarkTaskCancelAcrossProcesses(b *testing.B) {
	for _, mode := range []struct {
		name             string
		postgres, holder bool
	}{
		{"postgres/holder", true, true},
		{"sqlite/holder", false, true},
		{"postgres/no-holder", true, false},
		{"sqlite/no-holder", false, false},
	} {
		b.Run(mode.name, func(b *testing.B) { benchTaskCancelAcross(b, mode.postgres, mode.holder) })
	}
}

func benchTaskCancelAcross(b *testing.B, postgres, holder bool) {
	ctx := context.Background()
	dir := b.TempDir()
	db := filepath.Join(dir, "andon.db")
	if postgres {
		db, _ = testPostgres(b)
	}
	rec := filepath.Join(dir, "records.jsonl")
	if err := os.WriteFile(rec, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(rec)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	env := processEnv(b)
	mcpProc := startAndon(b, dir, env, "mcptest", "serve", "-tasks", "-http", "127.0.0.1:0", "-record", rec)
	mcpProc.waitOutput("its endpoint", contains("http://127.0.0.1:"))
	endpoint := firstLineWith(mcpProc.out.String(), "http://")
	const rev = mcp.Version20251125
	config := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  - name: e2e\n    url: %s\n    protocol: %s\n    requires_approval: false\n", endpoint, rev)), 0o644); err != nil {
		b.Fatal(err)
	}
	flags := []string{"--db", db, "--config", config}
	if holder {
		worker := startAndon(b, dir, env, append([]string{"worker", "--watch-interval", "1h"}, flags...)...)
		worker.waitOutput("its banner", contains("andon: worker executing"))
		if postgres {
			worker.waitOutput("that it listens", contains("listening for cancels from other processes"))
		}
		defer worker.stop()
	}
	serve, addr := startServeAPI(b, dir, env, append(flags, "--workers", "0")...)
	defer serve.stop()
	client := &api.Client{BaseURL: "http://" + addr, HTTP: &http.Client{Timeout: patience}, Token: readToken(b, dir)}
	if err := client.Health(ctx); err != nil {
		b.Fatal(err)
	}
	var st *sqlstore.Store
	var mc *mcp.Client
	if !holder {
		if st, err = sqlstore.Open(ctx, db); err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if mc, err = mcp.Connect(ctx, mcp.HTTP(endpoint, nil), &mcp.ClientOptions{ProtocolVersion: rev}); err != nil {
			b.Fatal(err)
		}
		defer mc.Close()
	}
	records := &fileRecords{f: f}
	work := json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_e2e_task_wait","arguments":{"ms":60000}}]},{"text":"done"}]}`)
	seen := map[string]bool{}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		var runID, taskID string
		if holder {
			run, err := client.CreateRun(ctx, &agent.Request{Prompt: "bench", Model: "script", Script: work})
			if err != nil {
				b.Fatal(err)
			}
			runID = run.ID
			created := records.wait(b, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated && !seen[r.Task] })
			taskID = created.Task
			for d, _ := client.GetRun(ctx, runID); d == nil || len(d.Tasks) == 0; d, _ = client.GetRun(ctx, runID) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(rand.N(100 * time.Millisecond))
		} else {
			runID, taskID = abandonedTask(b, ctx, st, mc, i)
		}
		seen[taskID] = true

		t0 := time.Now()
		if _, err := client.CancelRun(ctx, runID); err != nil {
			b.Fatalf("cancelling %s: %v", runID, err)
		}
		saw := records.wait(b, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == taskID })
		latencies = append(latencies, saw.At.Sub(t0))
	}
	b.StopTimer()
	reportLatencies(b, latencies)
}

// abandonedTask starts task_wait from mc, as a worker would, and writes the
// run as a worker that died during the call leaves it: running, its lease
// lapsed, the fence stamped, the model step that asked for the call, and
// the call's task.
func abandonedTask(b *testing.B, ctx context.Context, st *sqlstore.Store, mc *mcp.Client, i int) (runID, taskID string) {
	b.Helper()
	created := make(chan string, 1)
	// The call follows the task until it ends (the benchmark's cancel
	// ends it); it is never cancelled, as a dead worker cancels nothing.
	go mc.CallTool(ctx, "task_wait", map[string]any{"ms": 60000}, &mcp.CallOptions{OnTaskCreated: func(t mcp.Task) error {
		created <- t.ID
		return nil
	}})
	taskID = <-created
	runID = fmt.Sprintf("run_bench%06d", i)
	past := time.Now().Add(-time.Minute)
	if err := st.RunInsert(ctx, &agent.Run{ID: runID, Owner: "bench", Request: json.RawMessage(`{"prompt":"bench"}`),
		Status: agent.StatusRunning, LeaseOwner: "dead-worker", LeaseExpires: past, PendingEffect: agent.EffectNonIdempotentWrite,
		Attempts: 1, StartedAt: past}); err != nil {
		b.Fatal(err)
	}
	step := &agent.Step{RunID: runID, Kind: agent.StepModel, Round: 1, Args: []byte(`[{"id":"c","name":"mcp_e2e_task_wait","arguments":{}}]`)}
	if err := st.StepAppend(ctx, "dead-worker", step); err != nil {
		b.Fatal(err)
	}
	ok, err := st.TaskRecord(ctx, "dead-worker", &agent.Task{CallRef: agent.CallRef{RunID: runID, Step: step.Seq, Call: 1, Tool: "mcp_e2e_task_wait"},
		Server: "e2e", ID: taskID, Revision: mc.ProtocolVersion()})
	if err != nil || !ok {
		b.Fatalf("TaskRecord = %v, %v", ok, err)
	}
	return runID, taskID
}
