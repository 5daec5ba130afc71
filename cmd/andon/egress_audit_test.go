package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/vault"
)

// gatedResolver resolves mcp.test to loopback. Once held, the next lookup
// waits until its request's context ends (a slow DNS answer), saying when
// it has begun.
type gatedResolver struct {
	mu      sync.Mutex
	held    bool
	entered chan struct{}
}

func (r *gatedResolver) hold() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held, r.entered = true, make(chan struct{})
	return r.entered
}

func (r *gatedResolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	held, entered := r.held, r.entered
	r.held = false
	r.mu.Unlock()
	if held {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if host != "mcp.test" {
		return nil, fmt.Errorf("no such host %q", host)
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// countingSecrets counts the reads of a secret's value.
type countingSecrets struct {
	egress.Secrets
	reads atomic.Int64
}

func (s *countingSecrets) Apply(ctx context.Context, name string, req *http.Request) error {
	s.reads.Add(1)
	return s.Secrets.Apply(ctx, name, req)
}

// A run's tool call over HTTP leaves the audit row that says what happened
// to it, through the whole path — catalogue, mcp client, egress — on the
// stateless and the sessions generation: a budget that passes in flight is
// a failure (http_call, "deadline exceeded"), not a cancellation; a run
// cancelled in flight is http_call_cancelled; a run cancelled, or a budget
// passed, while the request waits for DNS sends nothing and reads no secret
// (http_call_cancelled_before_send, or a failed http_call before send).
// Every row the run causes, the handshake's and tools/list's included,
// carries its run id.
func TestMCPAuditRowsTellDeadlineCancelAndBeforeSend(t *testing.T) {
	t.Parallel()
	for _, gen := range []string{mcptest.Stateless, mcptest.Sessions} {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			v, log := newVaultAndLog(t)
			const secret = "s3cr3t-for-the-audit-vocabulary"
			placement, _ := vault.ParsePlacement("bearer")
			if err := v.Set(ctx, "remote-token", []byte(secret), placement, []string{"mcp.test"}); err != nil {
				t.Fatal(err)
			}

			srv := mcptest.NewServer(nil)
			hs := httptest.NewServer(srv.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{gen}}))
			defer srv.Close()
			defer hs.Close()
			u, _ := url.Parse(hs.URL)
			resolver := &gatedResolver{}
			secrets := &countingSecrets{Secrets: v}
			httpClient := node.MCPHTTPClient(egress.Config{
				Audit: log, Secrets: secrets, Logger: slog.New(slog.DiscardHandler),
				Resolver: resolver, DNSMemo: -1, AllowedHosts: []string{"127.0.0.1"},
			})
			cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{
				Name: "remote", URL: "http://mcp.test:" + u.Port() + "/mcp", Credential: "remote-token",
				Tools: map[string]catalogue.ToolConfig{"slow": {Budget: catalogue.Budget{Timeout: 400 * time.Millisecond}}},
			}}}, &catalogue.Options{HTTPClient: httpClient})
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()

			const runID = "run_vocabulary"
			runCtx := agent.WithRunID(ctx, runID)
			call := func(ctx context.Context, tool string, args string) *agent.ToolResult {
				t.Helper()
				tl, err := cat.Lookup(ctx, "mcp_remote_"+tool)
				if err != nil || tl == nil {
					t.Fatalf("Lookup(%s) = %v, %v", tool, tl, err)
				}
				res, err := tl.Call(ctx, json.RawMessage(args))
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				return res
			}
			seen := int64(0) // the rows asserted so far, by seq
			// newRows waits for a row of the run after the last seen that
			// has action want, and returns the rows after the last seen.
			newRows := func(want audit.Action, reason egress.Reason) []audit.Row {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for {
					all, err := log.List(ctx, audit.Query{})
					if err != nil {
						t.Fatal(err)
					}
					var rows []audit.Row
					found := false
					for _, r := range all {
						if r.Seq > seen {
							rows = append(rows, r)
							found = found || r.Action == want && r.Reason == string(reason)
						}
					}
					if found {
						for _, r := range rows {
							seen = max(seen, r.Seq)
							// Every row the run causes names it: the
							// handshake's, tools/list's, and a
							// cancellation notification's too. A
							// session's standalone stream (GET, opened to
							// hear list changes) is the connection's,
							// which outlives the run: it names none.
							standalone := r.Method == http.MethodGet && r.RunID == ""
							if r.RunID != runID && !standalone {
								t.Errorf("row %d (%s %s %s) carries run %q, want %q", r.Seq, r.Action, r.Method, r.Reason, r.RunID, runID)
							}
						}
						return rows
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %s row (%q) came; new rows: %s", want, reason, describeRows(rows))
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			count := func(rows []audit.Row, a audit.Action) int {
				n := 0
				for _, r := range rows {
					if r.Action == a {
						n++
					}
				}
				return n
			}

			// A call that completes: the handshake, tools/list and the call
			// leave rows, each under the run.
			if res := call(runCtx, "echo", `{"text":"hi"}`); res.Outcome != agent.OutcomeOK {
				t.Fatalf("echo = %+v", res)
			}
			newRows(audit.ActionHTTPCall, egress.ReasonCompleted)

			// The budget passes in flight: a failure, not a cancellation.
			if res := call(runCtx, "slow", `{"ms":60000}`); res.Outcome != agent.OutcomeFailed {
				t.Fatalf("slow past its budget = %+v, want a failed step", res)
			}
			rows := newRows(audit.ActionHTTPCall, egress.ReasonDeadline)
			if n := count(rows, audit.ActionHTTPCallCancelled); n != 0 {
				t.Errorf("a budget that passed was audited as %d cancellations: %s", n, describeRows(rows))
			}

			// The run is cancelled in flight: the credential went out.
			cctx, cancel := context.WithCancelCause(runCtx)
			go func() {
				// Once the server runs this second slow call.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					started := 0
					for _, r := range srv.Records() {
						if r.Kind == mcptest.ToolStarted && r.Tool == "slow" {
							started++
						}
					}
					if started == 2 {
						break
					}
				}
				cancel(agent.ErrRunCancelled)
			}()
			if res := call(cctx, "slow", `{"ms":60000}`); res.Outcome != agent.OutcomeCancelled {
				t.Fatalf("slow cancelled = %+v", res)
			}
			newRows(audit.ActionHTTPCallCancelled, egress.ReasonCancelledInFlight)

			// The run is cancelled while the request waits for DNS: nothing
			// goes out, no secret is read.
			calls, reads := len(srv.ReceivedMessages("tools/call")), secrets.reads.Load()
			cctx, cancel = context.WithCancelCause(runCtx)
			entered := resolver.hold()
			go func() {
				<-entered
				cancel(agent.ErrRunCancelled)
			}()
			if res := call(cctx, "echo", `{"text":"never"}`); res.Outcome != agent.OutcomeCancelled {
				t.Fatalf("echo cancelled before send = %+v", res)
			}
			newRows(audit.ActionHTTPCallCancelledBeforeSend, egress.ReasonCancelledBeforeSend)
			// The budget passes while the request waits for DNS: a failure
			// before send, likewise without a secret.
			resolver.hold()
			if res := call(runCtx, "slow", `{"ms":1}`); res.Outcome != agent.OutcomeFailed {
				t.Fatalf("slow past its budget before send = %+v", res)
			}
			newRows(audit.ActionHTTPCall, egress.ReasonDeadlineBeforeSend)
			if got := len(srv.ReceivedMessages("tools/call")); got != calls {
				t.Errorf("the server received %d more tools/call: a call stopped before send reached it", got-calls)
			}
			if got := secrets.reads.Load(); got != reads {
				t.Errorf("the secret was read %d times for calls stopped before send", got-reads)
			}

			all, _ := log.List(ctx, audit.Query{})
			for _, r := range all {
				if strings.Contains(fmt.Sprintf("%+v", r.Entry), secret) {
					t.Errorf("the secret is in audit row %d", r.Seq)
				}
			}
			if _, err := log.Verify(ctx); err != nil {
				t.Errorf("audit chain: %v", err)
			}
		})
	}
}

func describeRows(rows []audit.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\n  %d %s ok=%v %q run=%q", r.Seq, r.Action, r.OK, r.Reason, r.RunID)
	}
	return b.String()
}
