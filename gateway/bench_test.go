package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// The benchmarks in this file measure what the gateway adds to a call: the
// same andon client calls the same mcptest server (in this process) once
// directly and once through a node's gateway, in the same iteration, so
// that the ratio is taken within one run on one machine; a third call, the
// same one made with agent.Runtime.Call, splits the gateway's cost into
// the run and the MCP hop. Each cell's
// downstream (client to gateway) and upstream (gateway to server) use the
// same transport and revision; the direct call uses them too. The node is
// the real one: its store a SQLite file in a temp dir, so every gateway
// call is a run — its row, its steps, its end and its tool_call audit row.
// docs/benchmarks.md ("Through the gateway") has the numbers.

// benchCell is a transport of the benchmarks: a stdio-framed pipe
// (net.Pipe, both hops) or loopback HTTP, at a revision.
type benchCell struct {
	name     string
	http     bool
	protocol string
}

// benchCells are the cells measured: each era's revision on each.
func benchCells() []benchCell {
	return []benchCell{
		{"stdio/2025-11-25", false, mcp.Version20251125},
		{"stdio/2026-07-28", false, mcp.Version20260728},
		{"http-sessions/2025-11-25", true, mcp.Version20251125},
		{"http-stateless/2026-07-28", true, mcp.Version20260728},
	}
}

// benchRig is one cell's pair of clients on one upstream server.
type benchRig struct {
	n       *node.Node
	srv     *mcptest.Server
	direct  *mcp.Client // to srv
	gateway *mcp.Client // to n's gateway, which calls srv
	stmts   *sqlstore.StatementCounter
}

func newBenchRig(b *testing.B, isHTTP bool, protocol string) *benchRig {
	b.Helper()
	ctx := context.Background()
	srv := mcptest.NewServer(nil)
	b.Cleanup(srv.Close)
	s := catalogue.Server{Name: "s", Protocol: protocol, RequiresApproval: new(false),
		Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly, "echo": agent.EffectReadOnly}}
	key, err := vault.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	// The store node.New would open, but counting its statements.
	stmts := new(sqlstore.StatementCounter)
	st, err := sqlstore.Open(ctx, filepath.Join(b.TempDir(), "andon.db"), sqlstore.OpenCounter(stmts))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := &node.Config{Store: st, Key: key,
		Servers: &catalogue.Config{Servers: []catalogue.Server{s}}}
	var upstream func() mcp.Transport // how the direct client reaches srv
	if isHTTP {
		hs := httptest.NewServer(srv.HTTPHandler(nil))
		b.Cleanup(hs.Close)
		cfg.Servers.Servers[0].URL = hs.URL
		cfg.Egress = egress.Config{AllowedHosts: []string{"127.0.0.1"}}
		upstream = func() mcp.Transport { return mcp.HTTP(hs.URL, hs.Client()) }
	} else {
		cfg.Servers.Servers[0].Command = []string{"in-process"}
		cfg.Dial = func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil }
		upstream = srv.Transport
	}
	n, err := node.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(runCtx) }()
	b.Cleanup(func() {
		stop()
		<-stopped
		n.Close()
	})

	var down mcp.Transport
	if isHTTP {
		hs := httptest.NewServer(n.Gateway())
		b.Cleanup(hs.Close)
		down = mcp.HTTP(hs.URL, hs.Client())
	} else {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			n.Gateway().ServeStream(ctx, server, server)
		}()
		b.Cleanup(func() { server.Close(); <-done })
		down = mcp.Stream(client)
	}
	connect := func(tr mcp.Transport, what string) *mcp.Client {
		c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: protocol})
		if err != nil {
			b.Fatalf("connecting %s: %v", what, err)
		}
		b.Cleanup(func() { c.Close() })
		if got := c.ProtocolVersion(); got != protocol {
			b.Fatalf("%s negotiated %q, pinned %q", what, got, protocol)
		}
		return c
	}
	return &benchRig{n: n, srv: srv, direct: connect(upstream(), "to the server"), gateway: connect(down, "to the gateway"), stmts: stmts}
}

// echo calls echo on c and fails b unless it answered "hello".
func echo(b *testing.B, c *mcp.Client, name string) {
	res, err := c.CallTool(context.Background(), name, map[string]any{"text": "hello"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError || res.Text() != "hello" {
		b.Fatalf("%s answered %+v", name, res)
	}
}

// BenchmarkGatewayRoundTrip measures a call of echo from its start to its
// return in three ways, one of each per iteration (so ns/op is their sum):
// directly on the server ("direct"), through the gateway ("gateway"), and,
// to split the gateway's cost, as a run of the node's runtime with no MCP
// hop downstream ([agent.Runtime.Call], the call the gateway makes: "run").
// It reports each one's mean and p50 in µs, gateway/direct (of the means,
// and of the p50s), the store's statements, writes and transactions per
// gateway call (the direct call makes none), and at the end checks that
// the gateway and the runtime made one completed run per call.
func BenchmarkGatewayRoundTrip(b *testing.B) {
	for _, cell := range benchCells() {
		b.Run(cell.name, func(b *testing.B) {
			rig := newBenchRig(b, cell.http, cell.protocol)
			ctx := context.Background()
			rt := rig.n.Runtime()
			run := func() {
				res, err := rt.Call(ctx, "bench", &agent.DirectCall{Tool: "mcp_s_echo", Arguments: json.RawMessage(`{"text":"hello"}`)})
				if err != nil {
					b.Fatal(err)
				}
				if res.Run.Status != agent.StatusCompleted || res.Step == nil || res.Step.Text != "hello" {
					b.Fatalf("run %s ended %s, step %+v", res.Run.ID, res.Run.Status, res.Step)
				}
			}
			for range 20 { // warm up, untimed
				echo(b, rig.direct, "echo")
				run()
				echo(b, rig.gateway, "mcp_s_echo")
			}
			runsBefore := countRuns(b, rig.n)
			var store sqlstore.Counts // the gateway calls' alone
			direct := make([]time.Duration, 0, b.N)
			runs := make([]time.Duration, 0, b.N)
			through := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				echo(b, rig.direct, "echo")
				t1 := time.Now()
				run()
				t2 := time.Now()
				counted := rig.stmts.Read()
				t3 := time.Now()
				echo(b, rig.gateway, "mcp_s_echo")
				t4 := time.Now()
				c := rig.stmts.Read().Sub(counted)
				store = sqlstore.Counts{Statements: store.Statements + c.Statements, Writes: store.Writes + c.Writes, Transactions: store.Transactions + c.Transactions}
				direct = append(direct, t1.Sub(t0))
				runs = append(runs, t2.Sub(t1))
				through = append(through, t4.Sub(t3))
			}
			b.StopTimer()
			if got := countRuns(b, rig.n) - runsBefore; got != 2*b.N {
				b.Fatalf("the runtime and the gateway made %d completed runs for %d calls each", got, b.N)
			}
			dm, dp := meanP50(direct)
			rm, rp := meanP50(runs)
			gm, gp := meanP50(through)
			b.ReportMetric(dm, "direct-µs/op")
			b.ReportMetric(rm, "run-µs/op")
			b.ReportMetric(gm, "gateway-µs/op")
			b.ReportMetric(dp, "direct-p50-µs")
			b.ReportMetric(rp, "run-p50-µs")
			b.ReportMetric(gp, "gateway-p50-µs")
			b.ReportMetric(gm/dm, "ratio")
			b.ReportMetric(gp/dp, "ratio-p50")
			perCall := func(n uint64) float64 { return float64(n) / float64(b.N) }
			b.ReportMetric(perCall(store.Statements), "stmts/call")
			b.ReportMetric(perCall(store.Writes), "writes/call")
			b.ReportMetric(perCall(store.Transactions), "txs/call")
		})
	}
}

// BenchmarkGatewayCancelToWire measures how soon the upstream server hears
// of a client's cancel: from the caller's cancel() to the At of the
// server's record of it — notifications/cancelled received, or (2026-07-28
// over HTTP) the call's response stream closed — for a call of slow (60 s)
// made directly ("direct"), through the gateway ("gateway"), and as a run
// of the runtime with no MCP hop downstream ([agent.Runtime.Call]: "run"),
// one of each per iteration. Each is cancelled once the server has
// recorded that slow started, and the next starts once the server's
// handler saw the cancel and (for a run) the run has ended cancelled with
// its tool_call audit row; none of those waits is timed. It reports p50,
// p99 and max in µs of each, and the p99's difference, gateway minus
// direct. Run it with at least 200 cancels:
//
//	go test -run '^$' -bench GatewayCancelToWire -benchtime 200x ./gateway/
func BenchmarkGatewayCancelToWire(b *testing.B) {
	for _, cell := range benchCells() {
		b.Run(cell.name, func(b *testing.B) {
			rig := newBenchRig(b, cell.http, cell.protocol)
			streamClosed := cell.http && cell.protocol == mcp.Version20260728
			args := map[string]any{"ms": 60000}
			// cancelOne makes a call of slow with call, cancels it once the
			// server runs it and returns how soon the server heard.
			cancelOne := func(what string, call func(ctx context.Context) error) time.Duration {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				begun := time.Now() // the records of this call are those after it
				errc := make(chan error, 1)
				go func() { errc <- call(ctx) }()
				started := rig.wait(b, func(r mcptest.Record) bool {
					return r.Kind == mcptest.ToolStarted && r.Tool == "slow" && r.At.After(begun)
				})
				t0 := time.Now()
				cancel()
				heard := rig.wait(b, func(r mcptest.Record) bool {
					if !r.At.After(t0) {
						return false
					}
					if streamClosed {
						return r.Kind == mcptest.StreamClosed && r.ID == started.ID
					}
					return r.Kind == mcptest.Received && r.Method == "notifications/cancelled" && cancelledID(r) == started.ID
				})
				if err := <-errc; err != nil {
					b.Fatalf("%s: %v", what, err)
				}
				rig.wait(b, func(r mcptest.Record) bool {
					return r.Kind == mcptest.ToolCancelled && r.ID == started.ID && r.At.After(t0)
				})
				return heard.At.Sub(t0)
			}
			mcpCall := func(c *mcp.Client, name string) func(ctx context.Context) error {
				return func(ctx context.Context) error {
					if _, err := c.CallTool(ctx, name, args, nil); !errors.Is(err, mcp.ErrCancelled) {
						return fmt.Errorf("CallTool: %v, want ErrCancelled", err)
					}
					return nil
				}
			}
			runCall := func(ctx context.Context) error {
				res, err := rig.n.Runtime().Call(ctx, "bench", &agent.DirectCall{Tool: "mcp_s_slow", Arguments: json.RawMessage(`{"ms":60000}`)})
				if err != nil {
					return err
				}
				if res.Run.Status != agent.StatusCancelled {
					return fmt.Errorf("run %s ended %s, want cancelled", res.Run.ID, res.Run.Status)
				}
				return nil
			}
			direct := make([]time.Duration, 0, b.N)
			runs := make([]time.Duration, 0, b.N)
			through := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				direct = append(direct, cancelOne("direct", mcpCall(rig.direct, "slow")))
				runs = append(runs, cancelOne("run", runCall))
				rig.waitRunCancelled(b)
				through = append(through, cancelOne("gateway", mcpCall(rig.gateway, "mcp_s_slow")))
				rig.waitRunCancelled(b)
			}
			b.StopTimer()
			us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
			at := func(d []time.Duration, p int) float64 { return us(d[max((len(d)*p+99)/100-1, 0)]) }
			for _, arm := range []struct {
				name string
				d    []time.Duration
			}{{"direct", direct}, {"run", runs}, {"gateway", through}} {
				slices.Sort(arm.d)
				b.ReportMetric(at(arm.d, 50), arm.name+"-p50-µs")
				b.ReportMetric(at(arm.d, 99), arm.name+"-p99-µs")
				b.ReportMetric(us(arm.d[len(arm.d)-1]), arm.name+"-max-µs")
			}
			b.ReportMetric(at(through, 99)-at(direct, 99), "added-p99-µs")
			b.ReportMetric(float64(len(through)), "cancels")
		})
	}
}

// cancelledID is the requestId of a notifications/cancelled record, as
// JSON (the form of [mcptest.Record].ID).
func cancelledID(r mcptest.Record) string {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return ""
	}
	return string(p.RequestID)
}

func (rig *benchRig) wait(b *testing.B, match func(mcptest.Record) bool) mcptest.Record {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := rig.srv.WaitFor(ctx, match)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// waitRunCancelled waits until the gateway's latest run has ended
// cancelled and has its tool_call audit row: the call's bookkeeping is
// done before the next sample.
func (rig *benchRig) waitRunCancelled(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		if time.Now().After(deadline) {
			b.Fatal("the gateway's run did not end cancelled with its audit row")
		}
		runs, err := rig.n.Store().RunList(ctx, agent.RunFilter{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(runs) != 1 || !runs[0].Status.Terminal() {
			continue
		}
		if runs[0].Status != agent.StatusCancelled {
			b.Fatalf("run %s ended %s, want cancelled", runs[0].ID, runs[0].Status)
		}
		rows, err := rig.n.Audit().List(ctx, audit.Query{RunID: runs[0].ID, Action: audit.ActionToolCall})
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 1 {
			return
		}
	}
}

// countRuns counts the node's completed runs.
func countRuns(b *testing.B, n *node.Node) int {
	b.Helper()
	total, before := 0, ""
	for {
		runs, err := n.Store().RunList(context.Background(), agent.RunFilter{Status: agent.StatusCompleted, Limit: 1000, Before: before})
		if err != nil {
			b.Fatal(err)
		}
		total += len(runs)
		if len(runs) < 1000 {
			return total
		}
		before = runs[len(runs)-1].ID
	}
}

// meanP50 returns the mean and median of d in µs; it sorts d.
func meanP50(d []time.Duration) (mean, p50 float64) {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	slices.Sort(d)
	return float64(sum.Nanoseconds()) / 1e3 / float64(len(d)), float64(d[(len(d)-1)/2].Nanoseconds()) / 1e3
}
