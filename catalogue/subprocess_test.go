package catalogue_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The whole path through a real stdio subprocess, started by the default
// dialler: "@andon" is this test binary, which TestMain turns into an
// mcptest server. The server appends what it receives to a file that
// outlives each process.
func TestSubprocess(t *testing.T) {
	dir := t.TempDir()
	recordFile := filepath.Join(dir, "records.jsonl")
	pidFile := filepath.Join(dir, "pid")
	logs := newLogCapture()
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{
		Name:    "sub",
		Command: []string{catalogue.AndonExecutable, "-record", recordFile},
		Env:     map[string]string{serveEnv: "1", pidFileEnv: pidFile},
	}}}, &catalogue.Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cat.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	records := func() []mcptest.Record {
		recs, err := mcptest.ReadRecords(recordFile)
		if err != nil {
			t.Fatalf("reading the server's records: %v", err)
		}
		return recs
	}
	waitRecord := func(what string, match func(mcptest.Record) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, r := range records() {
				if match(r) {
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("the server never recorded %s", what)
	}
	call := func(ctx context.Context, name, args string) (*agent.ToolResult, error) {
		t.Helper()
		tool, err := cat.Lookup(context.Background(), name)
		if err != nil || tool == nil {
			t.Fatalf("Lookup(%q) = %v, %v", name, tool, err)
		}
		return tool.Call(ctx, json.RawMessage(args))
	}

	res, err := call(context.Background(), "mcp_sub_echo", `{"text":"from a subprocess"}`)
	wantResult(t, res, err, agent.OutcomeOK, "from a subprocess")

	// Cancel a slow call: a cancelled outcome, and the server is told.
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		for ctx.Err() == nil {
			recs, _ := mcptest.ReadRecords(recordFile)
			for _, r := range recs {
				if r.Kind == mcptest.ToolStarted && r.Tool == "slow" {
					cancel(agent.ErrRunCancelled)
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	res, err = call(ctx, "mcp_sub_slow", `{"ms":60000}`)
	cancel(nil) // in case the call ended some other way: stop the watcher
	wantResult(t, res, err, agent.OutcomeCancelled, `The call to tool "slow" on server "sub" was cancelled.`)
	waitRecord("notifications/cancelled", func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
	})
	waitRecord("the slow tool seeing its cancellation", func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolCancelled && r.Tool == "slow"
	})

	// The server exits in the middle of a call: the call fails, and is
	// not retried.
	if res, err := call(context.Background(), "mcp_sub_crash", `{}`); err == nil {
		t.Fatalf("a call whose server exited = %+v, want an error", res)
	}
	logs.waitFor(t, "mcp: connection lost", 1)
	if n := len(toolCalls(records(), "crash")); n != 1 {
		t.Errorf("the server received the crash call %d times, want once", n)
	}

	// The next call starts a new server.
	res, err = call(context.Background(), "mcp_sub_echo", `{"text":"a new process"}`)
	wantResult(t, res, err, agent.OutcomeOK, "a new process")
	if n := len(toolCalls(records(), "crash")); n != 1 {
		t.Errorf("after the next call, the server received the crash call %d times, want once", n)
	}

	// The server is killed between calls: the next call reconnects
	// before it sends anything, and succeeds.
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, "mcp: connection lost", 2)
	res, err = call(context.Background(), "mcp_sub_echo", `{"text":"a third process"}`)
	wantResult(t, res, err, agent.OutcomeOK, "a third process")

	if n := len(filterRecords(records(), func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && (r.Method == "initialize" || r.Method == "server/discover")
	})); n < 3 {
		t.Errorf("the server was connected to %d times, want 3", n)
	}
}

func filterRecords(recs []mcptest.Record, keep func(mcptest.Record) bool) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
