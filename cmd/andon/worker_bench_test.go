package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// BenchmarkCancelAcrossProcesses measures DESIGN.md's "run cancel → MCP
// wire … from another machine on PostgreSQL" between two processes on one
// machine: `andon serve --workers 0` (A, the API, executing nothing) and
// `andon worker` (B), both real subprocesses of the andon binary that
// TestMain builds, on one PostgreSQL database (a fresh schema). B runs
// mcptest's slow tool over stdio; the MCP server writes its records, with
// the wall clock, to a file.
//
// Each iteration starts a run through A's API, waits (untimed) until B's
// server has started the slow tool, and then a random time from 0 to 1 s
// (B's poll interval; untimed). The clock starts just before the
// cancel is sent to A (POST /v1/runs/{id}/cancel on a warm loopback
// connection) and stops at the time of the server's tool_cancelled record:
// the cancel went A → PostgreSQL → B's watcher → notifications/cancelled on
// B's stdio → the server's handler. Then it waits (untimed) for the run to
// record its cancelled step.
//
// postgres/notify: as deployed on PostgreSQL, A announces the cancel
// (NOTIFY) and B listens; River cancels the run's job too, and B's poll is
// an hour away, so whichever notification lands first stops the call.
// postgres/river: both run with --notify=false, so only River's job cancel
// (its own NOTIFY) carries it. sqlite/river: one SQLite file, River's job
// cancel through riversqlite's notification table, which every River
// client polls every 50 ms. It reports p50, p99 and max in ms, and
// returned-p50-ms, the median time until A answered the cancel. Run it
// with at least 50 cancels:
//
//	go test -run '^$' -bench CancelAcrossProcesses -benchtime 100x ./cmd/andon/
func BenchmarkCancelAcrossProcesses(b *testing.B) {
	for _, mode := range []struct {
		name     string
		postgres bool
		notify   bool
	}{
		{"postgres/notify", true, true},
		{"postgres/river", true, false},
		{"sqlite/river", false, false},
	} {
		b.Run(mode.name, func(b *testing.B) { benchCancelAcross(b, mode.postgres, mode.notify) })
	}
}

func benchCancelAcross(b *testing.B, postgres, notify bool) {
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
	config := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(config, []byte(testConfig(rec, false)), 0o644); err != nil {
		b.Fatal(err)
	}
	env := processEnv(b)
	flags := []string{"--db", db, "--config", config}
	if !notify {
		flags = append(flags, "--notify=false")
	}
	worker := startAndon(b, dir, env, append([]string{"worker", "--watch-interval", "1h"}, flags...)...)
	worker.waitOutput("its banner", contains("andon: worker executing"))
	if postgres && notify {
		worker.waitOutput("that it listens", contains("listening for cancels from other processes"))
	}
	serve, addr := startServeAPI(b, dir, env, append(flags, "--workers", "0")...)
	client := &api.Client{BaseURL: "http://" + addr, HTTP: &http.Client{Timeout: patience}, Token: readToken(b, dir)}
	if err := client.Health(ctx); err != nil { // a warm connection
		b.Fatal(err)
	}
	records := &fileRecords{f: f}
	slow := json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_e2e_slow","arguments":{"ms":60000}}]},{"text":"done"}]}`)
	seen := map[string]bool{} // request ids of slow calls already measured

	latencies := make([]time.Duration, 0, b.N)
	returns := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		run, err := client.CreateRun(ctx, &agent.Request{Prompt: "bench", Model: "script", Script: slow})
		if err != nil {
			b.Fatal(err)
		}
		started := records.wait(b, func(r mcptest.Record) bool {
			return r.Kind == mcptest.ToolStarted && r.Tool == "slow" && !seen[r.ID]
		})
		seen[started.ID] = true
		// Cancel at a random moment: otherwise every iteration would
		// cancel at the same phase of River's polls.
		time.Sleep(rand.N(100 * time.Millisecond))

		t0 := time.Now()
		if _, err := client.CancelRun(ctx, run.ID); err != nil {
			b.Fatalf("cancelling %s: %v", run.ID, err)
		}
		returns = append(returns, time.Since(t0))
		saw := records.wait(b, func(r mcptest.Record) bool {
			return r.Kind == mcptest.ToolCancelled && r.ID == started.ID
		})
		latencies = append(latencies, saw.At.Sub(t0))

		// Let the run record its cancelled step before the next starts.
		deadline := time.Now().Add(patience)
		for {
			d, err := client.GetRun(ctx, run.ID)
			if err != nil {
				b.Fatal(err)
			}
			if len(d.Steps) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("run %s recorded %d steps, want 2", run.ID, len(d.Steps))
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	serve.stop()
	worker.stop()
	slices.Sort(latencies)
	slices.Sort(returns)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(latencies, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
	b.ReportMetric(float64(len(latencies)), "cancels")
	b.ReportMetric(ms(percentile(returns, 50)), "returned-p50-ms")
	b.ReportMetric(ms(percentile(returns, 99)), "returned-p99-ms")
}
