package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/sqlstore"
)

// BenchmarkRunCancelToWire measures DESIGN.md's "run cancel → MCP wire":
// the time from an operator's cancel of a run whose tool call is in flight
// to the MCP server seeing the cancellation. The clock starts just before
// the cancel is asked for — Runtime.Cancel itself ("runtime"), or the API's
// POST /v1/runs/{id}/cancel over loopback HTTP ("api") — and stops at the
// time of mcptest's tool_cancelled record: the server's slow tool saw its
// request cancelled, so notifications/cancelled has crossed the transport
// and been acted on. The server runs in this process over a pipe ("pipe"),
// or as a real stdio subprocess, the andon binary's `mcptest serve`
// ("stdio"), which writes its records, stamped with the same wall clock, to
// a file. Everything else — submitting the run, waiting for the tool to
// start, waiting for the cancelled step to be recorded — is outside the
// measurement; ns/op covers the whole iteration and means little.
//
// It reports p50, p99 and max in milliseconds, and returned-p50-ms: the
// median time until the cancel call itself returned (for Runtime.Cancel,
// mostly the guarded status update in SQLite; the wire signal is sent only
// after it). Run it with at least 50 cancels per sub-benchmark:
//
//	go test -run '^$' -bench RunCancelToWire -benchtime 200x ./cmd/andon/
func BenchmarkRunCancelToWire(b *testing.B) {
	for _, transport := range []string{"pipe", "stdio"} {
		for _, entry := range []string{"runtime", "api"} {
			b.Run(transport+"/"+entry, func(b *testing.B) {
				benchRunCancel(b, transport, entry)
			})
		}
	}
}

// recordSource is where the benchmark reads what the server recorded.
type recordSource interface {
	// wait returns the first record that matches, waiting for it.
	wait(b testing.TB, match func(mcptest.Record) bool) mcptest.Record
}

// memRecords are the records of an in-process server.
type memRecords struct{ srv *mcptest.Server }

func (m memRecords) wait(b testing.TB, match func(mcptest.Record) bool) mcptest.Record {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	r, err := m.srv.WaitFor(ctx, match)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// fileRecords follows the record file of a subprocess server, reading only
// what was appended since the last look.
type fileRecords struct {
	f    *os.File
	off  int64
	part []byte
	recs []mcptest.Record
}

func (fr *fileRecords) wait(b testing.TB, match func(mcptest.Record) bool) mcptest.Record {
	b.Helper()
	deadline := time.Now().Add(patience)
	checked := 0
	for {
		for ; checked < len(fr.recs); checked++ {
			if match(fr.recs[checked]) {
				return fr.recs[checked]
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("no matching record after %v", patience)
		}
		if !fr.read(b) {
			time.Sleep(500 * time.Microsecond)
		}
	}
}

// read appends the whole lines written since the last read; it reports
// whether there were any.
func (fr *fileRecords) read(b testing.TB) bool {
	buf := make([]byte, 64<<10)
	n, err := fr.f.ReadAt(buf, fr.off)
	if err != nil && err != io.EOF {
		b.Fatal(err)
	}
	fr.off += int64(n)
	fr.part = append(fr.part, buf[:n]...)
	found := false
	for {
		i := bytes.IndexByte(fr.part, '\n')
		if i < 0 {
			return found
		}
		var r mcptest.Record
		if err := json.Unmarshal(fr.part[:i], &r); err != nil {
			b.Fatalf("record %q: %v", fr.part[:i], err)
		}
		fr.recs = append(fr.recs, r)
		fr.part = fr.part[i+1:]
		found = true
	}
}

func benchRunCancel(b *testing.B, transport, entry string) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	server := catalogue.Server{Name: "bench"}
	no := false
	server.RequiresApproval = &no
	var opts catalogue.Options
	var records recordSource
	switch transport {
	case "pipe":
		srv := mcptest.NewServer(nil)
		defer srv.Close()
		server.Command = []string{"unused: dialled in process"}
		opts.Dial = func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil }
		records = memRecords{srv}
	case "stdio":
		rec := filepath.Join(dir, "records.jsonl")
		if err := os.WriteFile(rec, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(rec)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		server.Command = []string{andonBin, "mcptest", "serve", "-record", rec}
		server.Env = map[string]string{"GORACE": "atexit_sleep_ms=0"}
		records = &fileRecords{f: f}
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
	cancel := func(id string) error { return rt.Cancel(ctx, agent.Actor{ID: "bench", Admin: true}, id) }
	if entry == "api" {
		h, err := api.NewHandler(api.Config{Runtime: rt, Store: st})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(h)
		defer hs.Close()
		client := &api.Client{BaseURL: hs.URL, HTTP: hs.Client()}
		if err := client.Health(ctx); err != nil { // a warm connection
			b.Fatal(err)
		}
		cancel = func(id string) error {
			_, err := client.CancelRun(ctx, id)
			return err
		}
	}
	slow := json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_bench_slow","arguments":{"ms":60000}}]},{"text":"done"}]}`)
	seen := map[string]bool{} // request ids of slow calls already measured

	latencies := make([]time.Duration, 0, b.N)
	returns := make([]time.Duration, 0, b.N) // until the cancel call returned
	b.ResetTimer()
	for range b.N {
		run, err := rt.Submit(ctx, "bench", &agent.Request{Prompt: "bench", Script: slow})
		if err != nil {
			b.Fatal(err)
		}
		started := records.wait(b, func(r mcptest.Record) bool {
			return r.Kind == mcptest.ToolStarted && r.Tool == "slow" && !seen[r.ID]
		})
		seen[started.ID] = true

		t0 := time.Now()
		if err := cancel(run.ID); err != nil {
			b.Fatalf("cancelling %s: %v", run.ID, err)
		}
		returns = append(returns, time.Since(t0))
		saw := records.wait(b, func(r mcptest.Record) bool {
			return r.Kind == mcptest.ToolCancelled && r.ID == started.ID
		})
		latencies = append(latencies, saw.At.Sub(t0))

		// Let the run record its cancelled step before the next starts.
		waitSteps(b, st, run.ID, 2)
	}
	b.StopTimer()
	slices.Sort(latencies)
	slices.Sort(returns)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(latencies, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
	b.ReportMetric(float64(len(latencies)), "cancels")
	b.ReportMetric(ms(percentile(returns, 50)), "returned-p50-ms")
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func waitSteps(b *testing.B, st *sqlstore.Store, id string, n int) {
	b.Helper()
	deadline := time.Now().Add(patience)
	for {
		steps, err := st.StepList(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if len(steps) >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s recorded %d steps, want %d", id, len(steps), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// scriptModel is the script model of a run's script, as a node makes it.
func scriptModel(_ context.Context, req *agent.Request) (model.Model, error) {
	s, err := script.Parse(req.Script)
	if err != nil {
		return nil, err
	}
	return script.New(s)
}
