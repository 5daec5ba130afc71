package node_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// waitFor waits, generously, for a run to reach want, and fails t if it ends
// otherwise.
func waitFor(t *testing.T, n *node.Node, runID string, want agent.Status) *agent.Run {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		run, err := n.Store().RunGet(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == want {
			return run
		}
		if run.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s: %s), want %s", runID, run.Status, run.Reason, run.Error, want)
		}
	}
}

// A cancel made on one node reaches the MCP wire of the node executing the
// run, by the fan-out New wires — NOTIFY on PostgreSQL, the run's River job
// on either backend — and not by the watcher's poll or a lease renewal,
// which are too slow here to be the ones that do it.
func TestCancelReachesTheNodeExecutingTheRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		postgres bool
		noNotify bool
		// notifyOnly: the cancel is the row and a NOTIFY from a process
		// that is no node (no River job cancel): the listener alone must
		// carry it.
		notifyOnly bool
	}{
		{"sqlite", false, false, false},
		{"postgres", true, false, false},
		{"postgres without notify", true, true, false},
		{"postgres notify alone", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "andon.db")
			if tc.postgres {
				db = pgtest.Schema(t)
			}
			srv := mcptest.NewServer(nil)
			defer srv.Close()
			servers := &catalogue.Config{Servers: []catalogue.Server{{
				Name: "s", Command: []string{"in-process"}, RequiresApproval: new(false),
				Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly},
			}}}
			key := newKey(t)
			cfg := func(apiOnly bool) *node.Config {
				return &node.Config{DB: db, Key: key, Servers: servers, APIOnly: apiOnly, NoNotify: tc.noNotify,
					// Neither the watcher's poll (the backstop) nor a lease
					// renewal, which reads the row too, may be what cancels.
					WatchInterval: time.Hour, LeaseDuration: time.Hour,
					Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) {
						return srv.Transport(), nil
					}}
			}
			worker, err := node.New(ctx, cfg(false))
			if err != nil {
				t.Fatal(err)
			}
			defer worker.Close()
			api, err := node.New(ctx, cfg(true))
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			for _, n := range []*node.Node{worker, api} {
				stopped := make(chan error, 1)
				go func() { stopped <- n.Run(runCtx) }()
				defer func() { stop(); <-stopped }()
			}

			run := startSlowRun(t, api, srv)
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if tc.notifyOnly {
				cancelByNotifyAlone(t, db, run.ID)
			} else if err := api.Runtime().Cancel(ctx, agent.Actor{ID: "o"}, run.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" }); err != nil {
				t.Fatalf("the server never saw the call cancelled: %v", err)
			}
			if got := srv.ReceivedMessages("notifications/cancelled"); len(got) != 1 {
				t.Fatalf("the server got %d notifications/cancelled, want 1", len(got))
			}
			steps, err := worker.Store().StepList(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				if s.Kind == agent.StepTool && s.Outcome != agent.OutcomeCancelled {
					t.Fatalf("the slow call's step is %s, want cancelled", s.Outcome)
				}
			}
		})
	}
}

// cancelByNotifyAlone cancels a run as a process on the database could
// without a runtime: the row, then a NOTIFY.
func cancelByNotifyAlone(t *testing.T, db, runID string) {
	t.Helper()
	pg, err := sqlstore.OpenPostgres(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if ok, err := pg.RunFinish(t.Context(), runID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); err != nil || !ok {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	bus, ok := pg.Notifier()
	if !ok {
		t.Fatal("a PostgreSQL store has no Notifier")
	}
	if err := bus.NotifyCancelled(t.Context(), runID); err != nil {
		t.Fatal(err)
	}
}

// A cancel announced while the listener was away is missed by it: once it
// listens again, the watcher reads the rows at once instead of at its next
// poll.
func TestAListenerBackFromALossLooksAtOnce(t *testing.T) {
	ctx := context.Background()
	app := "andon_node_" + strings.ReplaceAll(t.Name(), "/", "_")
	base := pgtest.Schema(t)
	db := pgtest.WithParams(base, map[string]string{"application_name": app})
	srv := mcptest.NewServer(nil)
	defer srv.Close()
	n, err := node.New(ctx, &node.Config{DB: db, Key: newKey(t),
		Servers: &catalogue.Config{Servers: []catalogue.Server{{
			Name: "s", Command: []string{"in-process"}, RequiresApproval: new(false),
			Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly},
		}}},
		WatchInterval: time.Hour, LeaseDuration: time.Hour,
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(runCtx) }()
	defer func() { stop(); <-stopped }()

	run := startSlowRun(t, n, srv)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Cancelled in the row only, as while nobody listened: no NOTIFY, no
	// job cancel.
	pg, err := sqlstore.OpenPostgres(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if ok, err := pg.RunFinish(ctx, run.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); err != nil || !ok {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	if err := pgtest.Exec(wctx, base, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = '`+app+`' AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" }); err != nil {
		t.Fatalf("the call was not cancelled once the listener was back: %v", err)
	}
}

// startSlowRun submits, through n, a run whose one call is srv's slow tool
// for ten minutes, and returns it once the server has started the call.
func startSlowRun(t *testing.T, n *node.Node, srv *mcptest.Server) *agent.Run {
	t.Helper()
	run, err := n.Runtime().Submit(t.Context(), "o", &agent.Request{Prompt: "p", Script: json.RawMessage(`{"steps": [
		{"tool_calls": [{"name": "mcp_s_slow", "arguments": {"ms": 600000}}]}, {"text": "finished"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" }); err != nil {
		t.Fatalf("the slow call never started: %v", err)
	}
	return run
}
