package interop

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/vault"
)

// gatewayNode assembles a node whose catalogue has one server, "up",
// reached through up's dial, and runs it until t ends.
func gatewayNode(t *testing.T, up *upstreamPeer) *node.Node {
	t.Helper()
	key, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := catalogue.Server{Name: "up", Command: []string{"in-test"}, RequiresApproval: new(false),
		Effects: map[string]agent.Effect{up.echo.tool: agent.EffectReadOnly, up.slow.tool: agent.EffectReadOnly}}
	cfg := &node.Config{
		DB:            filepath.Join(t.TempDir(), "andon.db"),
		Key:           key,
		Servers:       &catalogue.Config{Servers: []catalogue.Server{s}},
		WatchInterval: 50 * time.Millisecond,
		Logger:        testLogger(t),
		Dial:          func(ctx context.Context, _ catalogue.Server) (mcp.Transport, error) { return up.dial(ctx) },
	}
	if up.url != "" {
		cfg.Servers.Servers[0].Command, cfg.Servers.Servers[0].URL = nil, up.url
		cfg.Egress = egress.Config{AllowedHosts: []string{"127.0.0.1"}}
		cfg.Dial = nil
	}
	n, err := node.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		<-stopped
		n.Close()
	})
	return n
}

// TestGatewayInterop is the gateway's interop matrix: each downstream
// client (go-sdk, mcp-go, the TypeScript SDK; over stdio and Streamable
// HTTP) lists the tools of each upstream server (go-sdk, mcp-go,
// server-everything and mcptest over stdio; go-sdk and mcp-go over
// Streamable HTTP) through the gateway, calls one, then starts
// a slow call and cancels it as its own API does. The upstream server must
// be told — the notifications/cancelled naming the call reached it, or
// over HTTP the call's response stream was closed on it, and where the
// peer can show it, its handler's context ended — the call's
// run must end cancelled with its audit row, and the client's session must
// still serve a call.
func TestGatewayInterop(t *testing.T) {
	t.Parallel()
	for _, upKind := range upstreamKinds {
		for _, down := range downstreamClients {
			t.Run(down.name+" to "+upKind, func(t *testing.T) {
				t.Parallel()
				up := newUpstream(t, upKind)
				n := gatewayNode(t, up)
				plan := gatewayPlan{
					echo: toolCall{tool: localName(up.echo.tool), args: up.echo.args, want: up.echo.want},
					slow: toolCall{tool: localName(up.slow.tool), args: up.slow.args},
				}
				d := down.connect(t, n.Gateway(), down.http, plan)

				tools := d.tools(t)
				if !slices.Contains(tools, plan.echo.tool) || !slices.Contains(tools, plan.slow.tool) {
					t.Fatalf("tools/list through the gateway: %q, want %s and %s among them", tools, plan.echo.tool, plan.slow.tool)
				}
				if got := d.echo(t); got != up.echo.want {
					t.Fatalf("%s through the gateway answered %q, want %q", plan.echo.tool, got, up.echo.want)
				}

				d.startSlow(t)
				up.started(t)
				ended := d.cancelSlow(t)
				saw := up.told(t)
				run := waitCancelledRun(t, n, plan.slow.tool)
				if row := auditCall(t, n, run.ID); !strings.Contains(row.Reason, "cancelled") {
					t.Errorf("tool_call audit row %+v, want one saying cancelled", row)
				}
				if got := d.echo(t); got != up.echo.want {
					t.Errorf("after the cancel, %s answered %q, want %q", plan.echo.tool, got, up.echo.want)
				}
				// On stdio the client's cancel must be the notification
				// (the spec's MUST), not its end of the stream.
				if !down.http && !d.sent().sentCancel() {
					t.Errorf("the client sent no notifications/cancelled on stdio")
				}
				t.Logf("client %s: %s; its call ended %s; upstream saw %s; run %s %s", down.name, d.sent(), ended, saw, run.ID, run.Status)
			})
		}
	}
}

// waitCancelledRun waits for the run of the call of tool to end, and
// fails t unless it ended cancelled.
func waitCancelledRun(t *testing.T, n *node.Node, tool string) *agent.Run {
	t.Helper()
	for deadline := time.Now().Add(nodeBudget); ; time.Sleep(10 * time.Millisecond) {
		runs, err := n.Store().RunList(t.Context(), agent.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			if !strings.Contains(string(run.Request), tool) {
				continue
			}
			if run.Status == agent.StatusCancelled {
				return run
			}
			if run.Status.Terminal() {
				t.Fatalf("run %s of %s ended %s (%s: %s), want cancelled", run.ID, tool, run.Status, run.Reason, run.Error)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cancelled run of %s among %d runs", tool, len(runs))
		}
	}
}

// auditCall waits for the tool_call audit row of run id.
func auditCall(t *testing.T, n *node.Node, id string) audit.Row {
	t.Helper()
	for deadline := time.Now().Add(nodeBudget); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rows, err := n.Audit().List(t.Context(), audit.Query{RunID: id, Action: audit.ActionToolCall})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			return rows[0]
		}
	}
	t.Fatalf("no tool_call audit row for run %s", id)
	return audit.Row{}
}
