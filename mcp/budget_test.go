package mcp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// hostile is a server that stalls a client in one leg of connecting.
type hostile struct {
	name string
	leg  string // the leg Connect must name
	// start returns the transport and the server's records (nil when the
	// server records nothing: a process that never reads, a bare socket).
	start func(t testing.TB) (mcp.Transport, func() []mcptest.Record)
	pin   string // ClientOptions.ProtocolVersion
	// slowStart: the server is a subprocess that must start and answer a
	// leg before the stall, so it gets a budget a loaded machine can keep.
	slowStart bool
}

// stallAt is the method the server records when the client is in the leg.
func (h hostile) stallAt() string {
	if h.leg == mcp.LegInitialized {
		return "notifications/initialized"
	}
	return h.leg
}

// hostileServers covers each leg of connecting on stdio and on each HTTP
// generation, and the ways an HTTP server can stall below the protocol.
func hostileServers() []hostile {
	inproc := func(opts mcptest.Options) func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
		return func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			s := mcptest.NewServer(&opts)
			t.Cleanup(s.Close)
			return s.Transport(), s.Records
		}
	}
	overHTTP := func(opts mcptest.Options, hopts mcptest.HTTPOptions) func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
		return func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			s := mcptest.NewServer(&opts)
			hs := httptest.NewServer(s.HTTPHandler(&hopts))
			t.Cleanup(s.Close) // runs after hs.Close: stalled handlers let go first
			t.Cleanup(func() {
				hs.CloseClientConnections() // a client that hangs must not hang the test
				hs.Close()
			})
			return &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), CloseTimeout: 100 * time.Millisecond}, s.Records
		}
	}
	legacy := []string{mcp.Version20251125}
	fault := func(f mcptest.Fault) hostile {
		return hostile{name: "http/" + string(f), leg: mcp.LegDiscover, start: overHTTP(mcptest.Options{}, mcptest.HTTPOptions{Fault: f})}
	}
	return []hostile{
		{name: "stdio/never-writes", leg: mcp.LegDiscover, start: func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			cmd := mcp.Command("sleep", "3600")
			cmd.TerminateGrace = 50 * time.Millisecond
			return cmd, nil
		}},
		{name: "stdio/never-writes/pinned-2025-11-25", leg: mcp.LegInitialize, pin: mcp.Version20251125, start: func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			cmd := mcp.Command("sleep", "3600")
			cmd.TerminateGrace = 50 * time.Millisecond
			return cmd, nil
		}},
		{name: "stdio/initialize-stalled", leg: mcp.LegInitialize, slowStart: true, start: func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			file := filepath.Join(t.TempDir(), "records.jsonl")
			cmd := serverCommand(t, "-record", file, "-versions", mcp.Version20251125, "-stall", "initialize")
			return cmd, func() []mcptest.Record {
				recs, err := mcptest.ReadRecords(file)
				if err != nil && !os.IsNotExist(err) {
					t.Logf("reading records: %v", err)
				}
				return recs
			}
		}},
		{name: "pipe/discover-stalled", leg: mcp.LegDiscover, start: inproc(mcptest.Options{Stall: []string{"server/discover"}})},
		{name: "pipe/discover-answered-initialize-stalled", leg: mcp.LegInitialize, start: inproc(mcptest.Options{Versions: legacy, Stall: []string{"initialize"}})},
		{name: "http/stateless/discover-stalled", leg: mcp.LegDiscover, start: overHTTP(mcptest.Options{Stall: []string{"server/discover"}}, mcptest.HTTPOptions{})},
		{name: "http/sessions/initialize-stalled", leg: mcp.LegInitialize, start: overHTTP(mcptest.Options{Versions: legacy, Stall: []string{"initialize"}}, mcptest.HTTPOptions{})},
		{name: "http/sessions/initialized-post-stalled", leg: mcp.LegInitialized, start: overHTTP(mcptest.Options{Versions: legacy, Stall: []string{"notifications/initialized"}}, mcptest.HTTPOptions{})},
		{name: "http+sse/initialize-stalled", leg: mcp.LegInitialize, pin: mcp.Version20241105,
			start: overHTTP(mcptest.Options{Stall: []string{"initialize"}}, mcptest.HTTPOptions{Generations: []string{mcptest.LegacySSE}})},
		fault(mcptest.FaultSilent),
		fault(mcptest.FaultHeadersThenSilence),
		fault(mcptest.FaultKeepAlive),
		fault(mcptest.FaultTrickle),
		{name: "tcp/accepts-never-answers", leg: mcp.LegDiscover, start: func(t testing.TB) (mcp.Transport, func() []mcptest.Record) {
			return &mcp.HTTPTransport{URL: silentListener(t)}, nil
		}},
	}
}

// silentListener starts an mcptest.SilentListener for the test and
// returns its URL.
func silentListener(t testing.TB) string {
	t.Helper()
	l, err := mcptest.NewSilentListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l.URL()
}

// connectHostile runs Connect against h and returns its error. It fails the
// test if Connect has not returned long after the budget: a leg that does
// not hear the deadline or the cancel hangs there.
func connectHostile(t *testing.T, ctx context.Context, tr mcp.Transport, opts *mcp.ClientOptions) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := mcp.Connect(ctx, tr, opts)
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Connect did not return 10 s after its budget: a leg of the handshake ignores it")
		return nil
	}
}

func TestConnectBudgetCoversEveryLeg(t *testing.T) {
	budget := func(h hostile) time.Duration {
		if h.slowStart {
			return 3 * time.Second
		}
		return 300 * time.Millisecond
	}
	interruptions := []struct {
		name     string
		kind     error // ErrTimeout or ErrCancelled
		ctxErr   error
		wording  string
		interrup func(t *testing.T, h hostile, records func() []mcptest.Record) (context.Context, *mcp.ClientOptions)
	}{
		{name: "deadline", kind: mcp.ErrTimeout, ctxErr: context.DeadlineExceeded, wording: "timed out during ",
			interrup: func(t *testing.T, h hostile, _ func() []mcptest.Record) (context.Context, *mcp.ClientOptions) {
				ctx, cancel := context.WithTimeout(context.Background(), budget(h))
				t.Cleanup(cancel)
				return ctx, &mcp.ClientOptions{}
			}},
		{name: "connect-timeout", kind: mcp.ErrTimeout, ctxErr: context.DeadlineExceeded, wording: "timed out during ",
			interrup: func(t *testing.T, h hostile, _ func() []mcptest.Record) (context.Context, *mcp.ClientOptions) {
				return context.Background(), &mcp.ClientOptions{ConnectTimeout: budget(h)}
			}},
		{name: "cancel", kind: mcp.ErrCancelled, ctxErr: context.Canceled, wording: "cancelled during ",
			interrup: func(t *testing.T, h hostile, records func() []mcptest.Record) (context.Context, *mcp.ClientOptions) {
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				go func() {
					// Cancel once the server holds the client in the leg
					// (or, for a server that records nothing, a moment in).
					for deadline := time.Now().Add(10 * time.Second); records != nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
						if len(recordsOf(records(), h.stallAt())) > 0 {
							break
						}
					}
					if records == nil {
						time.Sleep(100 * time.Millisecond)
					}
					cancel()
				}()
				return ctx, &mcp.ClientOptions{ConnectTimeout: time.Hour}
			}},
	}
	for _, h := range hostileServers() {
		for _, in := range interruptions {
			t.Run(h.name+"/"+in.name, func(t *testing.T) {
				t.Parallel()
				tr, records := h.start(t)
				ctx, opts := in.interrup(t, h, records)
				opts.ProtocolVersion = h.pin
				opts.DiscoverTimeout = time.Hour // the budget, not the probe's bound, must end it
				err := connectHostile(t, ctx, tr, opts)

				var ce *mcp.ConnectError
				if !errors.As(err, &ce) {
					t.Fatalf("Connect = %v, want a *ConnectError", err)
				}
				if ce.Leg != h.leg {
					t.Errorf("Connect failed in leg %q, want %q (%v)", ce.Leg, h.leg, err)
				}
				if !errors.Is(err, in.kind) || !errors.Is(err, in.ctxErr) {
					t.Errorf("Connect = %v, want it to match %v and %v", err, in.kind, in.ctxErr)
				}
				if !strings.Contains(err.Error(), in.wording+h.leg) {
					t.Errorf("Connect = %q, want it to say %q", err, in.wording+h.leg)
				}
				if records == nil {
					return
				}
				if len(recordsOf(records(), h.stallAt())) == 0 {
					t.Errorf("the server never saw %s: the test did not reach the leg", h.stallAt())
				}
				if n := len(recordsOf(records(), "notifications/cancelled")); n != 0 {
					t.Errorf("the server received %d notifications/cancelled: a handshake is abandoned, never cancelled by notification", n)
				}
			})
		}
	}
}

// recordsOf returns the received messages with method.
func recordsOf(recs []mcptest.Record, method string) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range recs {
		if r.Kind == mcptest.Received && r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// The session DELETE on close has a bound of its own: a server that stalls
// it cannot hold Close.
func TestCloseBoundsAStalledDelete(t *testing.T) {
	s := mcptest.NewServer(&mcptest.Options{Versions: []string{mcp.Version20251125}, Stall: []string{"DELETE"}})
	hs := httptest.NewServer(s.HTTPHandler(nil))
	t.Cleanup(s.Close)
	t.Cleanup(hs.Close)
	c, err := mcp.Connect(context.Background(), &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), CloseTimeout: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		panic("Close did not return: the stalled DELETE held it")
	}
	recs := s.Records()
	if len(recordsOf(recs, "DELETE")) != 1 {
		t.Fatalf("the server saw %d DELETEs, want 1", len(recordsOf(recs, "DELETE")))
	}
	waitForRecord(t, s.Records, func(r mcptest.Record) bool { return r.Kind == mcptest.StreamClosed && r.Method == "DELETE" })
}

func waitForRecord(t *testing.T, records func() []mcptest.Record, match func(mcptest.Record) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, r := range records() {
			if match(r) {
				return
			}
		}
	}
	t.Fatalf("the server never recorded it; records:\n%s", formatRecords(records()))
}

// swappable serves whichever handler it holds now, so a test can "restart"
// a server on the same address.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }
func (s *swappable) set(h http.Handler)                               { s.h.Store(&h) }

// A server restarted mid-call: the connection is reset and the new process
// knows nothing of the old one. The call in flight ends at once with a
// clear error instead of waiting out its budget, and a new connection is
// made within its own budget.
func TestServerRestartedMidCall(t *testing.T) {
	for _, m := range []mode{http2026, http2025, http2024} {
		t.Run(m.name, func(t *testing.T) {
			old := mcptest.NewServer(nil)
			t.Cleanup(old.Close)
			sw := &swappable{}
			sw.set(old.HTTPHandler(m.http))
			hs := httptest.NewServer(sw)
			t.Cleanup(hs.Close)
			tr := &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), CloseTimeout: 100 * time.Millisecond}
			c, err := mcp.Connect(context.Background(), tr, &mcp.ClientOptions{ProtocolVersion: m.version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })

			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(context.Background(), "slow", map[string]any{"ms": 3_600_000}, &mcp.CallOptions{Timeout: time.Hour})
				errc <- err
			}()
			waitForRecord(t, old.Records, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted })
			fresh := mcptest.NewServer(nil)
			t.Cleanup(fresh.Close)
			sw.set(fresh.HTTPHandler(m.http))
			hs.CloseClientConnections() // the old process is gone

			select {
			case err := <-errc:
				if !errors.Is(err, mcp.ErrClosed) || errors.Is(err, mcp.ErrTimeout) {
					t.Fatalf("call in flight across the restart = %v, want ErrClosed", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the call in flight did not end when its connection was reset")
			}

			// Whatever the old client still believes, a new connection
			// reaches the new server within its own budget. It gets an HTTP
			// pool of its own: the old one may still hold a keep-alive
			// connection to the old process that it has not yet seen
			// closed, a POST on it fails ("broken pipe", "server closed
			// idle connection"), and andon never retries a POST that may
			// have been written. A pool whose sockets the restart closed
			// long ago amounts to the same.
			pool := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(pool.CloseIdleConnections)
			tr2 := &mcp.HTTPTransport{URL: hs.URL, Client: &http.Client{Transport: pool}, CloseTimeout: tr.CloseTimeout}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c2, err := mcp.Connect(ctx, tr2, &mcp.ClientOptions{ProtocolVersion: m.version})
			if err != nil {
				t.Fatalf("reconnecting after the restart: %v", err)
			}
			defer c2.Close()
			if _, err := c2.CallTool(ctx, "echo", map[string]any{"text": "again"}, nil); err != nil {
				t.Fatalf("call after the restart: %v", err)
			}
		})
	}
}

// A subprocess whose handshake failed is gone when Connect returns: nothing
// is left behind to hold a pipe, a port or a credential.
func TestAFailedHandshakeLeavesNoProcess(t *testing.T) {
	const marker = "3601.25" // an argument no other process has
	cmd := mcp.Command("sleep", marker)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := connectHostile(t, ctx, cmd, nil); !errors.Is(err, mcp.ErrTimeout) {
		t.Fatalf("Connect = %v, want ErrTimeout", err)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(procs) == 0 {
		t.Skip("no /proc to look for the server in")
	}
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
			t.Errorf("the server (%s) outlived its failed handshake", filepath.Dir(p))
		}
	}
}

// A subprocess that never answered the handshake is not given a grace
// period on top of the spent budget: it had its chance. (Its grace is an
// hour here: Connect returns only because it is not waited for.)
func TestAFailedHandshakeDoesNotWaitOutTheServersGrace(t *testing.T) {
	cmd := mcp.Command("sleep", "3600")
	cmd.TerminateGrace = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := connectHostile(t, ctx, cmd, nil)
	if !errors.Is(err, mcp.ErrTimeout) {
		t.Fatalf("Connect = %v, want ErrTimeout", err)
	}
}

// Nor is one that ignores SIGTERM given the grace after it: once the
// budget is spent, each step of the teardown gets a moment (the sh and the
// sleep it runs ignore SIGTERM; only SIGKILL ends them).
func TestAFailedHandshakeDoesNotWaitOutAStubbornServersGrace(t *testing.T) {
	cmd := mcp.Command("sh", "-c", `trap "" TERM; sleep 3600`)
	cmd.TerminateGrace = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := connectHostile(t, ctx, cmd, nil)
	if !errors.Is(err, mcp.ErrTimeout) {
		t.Fatalf("Connect = %v, want ErrTimeout", err)
	}
}

// BenchmarkHandshakeBudget measures what a server that never answers costs
// its caller, against each hostile server: the time Connect takes, teardown
// included, as a ratio of the budget (x-budget; 1.00 is the budget exactly).
//
//	go test -run '^$' -bench HandshakeBudget -benchtime 5x ./mcp/
func BenchmarkHandshakeBudget(b *testing.B) {
	const budget = 200 * time.Millisecond
	for _, h := range hostileServers() {
		b.Run(h.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				tr, _ := h.start(b)
				ctx, cancel := context.WithTimeout(context.Background(), budget)
				start := time.Now()
				c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: h.pin, DiscoverTimeout: time.Hour})
				total += time.Since(start)
				cancel()
				if c != nil {
					c.Close()
				}
				if !errors.Is(err, mcp.ErrTimeout) {
					b.Fatalf("Connect = %v, want ErrTimeout", err)
				}
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(budget), "x-budget")
		})
	}
}

// Connect with a context that has already ended sends nothing and still
// releases the transport: a Stream's stream is closed, so a peer reading it
// is not left waiting for ever.
func TestConnectWithAnEndedContextReleasesTheTransport(t *testing.T) {
	client, server := net.Pipe()
	peerDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, server)
		peerDone <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := mcp.Connect(ctx, mcp.Stream(client), nil)
	var ce *mcp.ConnectError
	if !errors.As(err, &ce) || ce.Leg != mcp.LegConnect || !errors.Is(err, mcp.ErrCancelled) {
		t.Fatalf("Connect = %v, want a cancelled *ConnectError in leg %s", err, mcp.LegConnect)
	}
	select {
	case <-peerDone:
	case <-time.After(10 * time.Second):
		server.Close()
		t.Fatal("the stream was never closed: its peer still waits")
	}
}
