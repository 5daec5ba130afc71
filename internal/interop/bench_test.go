package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The benchmarks in this file measure andon's client, go-sdk v1.8.0's and
// mcp-go v1.2.1's against the same server: a go-sdk server in a subprocess
// over stdio (gosdkserver_test.go), a fresh one per client and revision —
// and the floor (floor_test.go), a raw client on the same server that
// costs nothing but the wire. Only the client runs in the benchmark's
// process, so allocations are the client's. docs/benchmarks.md has the
// numbers and how they were taken.

// benchClient is the one thing the benchmarks ask of a client.
type benchClient interface {
	// call calls tool name with args and returns an error unless the tool
	// answered with a result that is not an error.
	call(ctx context.Context, name string, args map[string]any) error
	// isCancelled reports whether err is the client's error for a call its
	// caller cancelled.
	isCancelled(err error) bool
}

type andonBench struct{ c *mcp.Client }

func (a andonBench) call(ctx context.Context, name string, args map[string]any) error {
	res, err := a.c.CallTool(ctx, name, args, nil)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error: %s", name, res.Text())
	}
	return err
}

func (andonBench) isCancelled(err error) bool {
	return errors.Is(err, mcp.ErrCancelled) && errors.Is(err, context.Canceled)
}

type gosdkBench struct{ cs *gosdk.ClientSession }

func (g gosdkBench) call(ctx context.Context, name string, args map[string]any) error {
	res, err := g.cs.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error", name)
	}
	return err
}

func (gosdkBench) isCancelled(err error) bool { return errors.Is(err, context.Canceled) }

// benchClients are the clients compared, in the order they are reported.
var benchClients = []string{"andon", "gosdk", "mcpgo", "floor"}

// startBench starts a go-sdk server subprocess with the extra environment
// env and connects the client named kind to it, pinned to revision. Both
// end with b.
func startBench(b *testing.B, kind, revision string, env ...string) benchClient {
	b.Helper()
	exe, env := selfCommand(b, roleGoSDKServer, env...)
	ctx, cancel := context.WithTimeout(context.Background(), pollDeadline)
	defer cancel()
	switch kind {
	case "andon":
		tr := mcp.Command(exe)
		tr.Env = env
		c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: revision, Logger: testLogger(b)})
		if err != nil {
			b.Fatalf("andon connecting to the go-sdk server: %v", err)
		}
		b.Cleanup(func() {
			if err := c.Close(); err != nil {
				b.Errorf("closing andon's client: %v", err)
			}
		})
		if got := c.ProtocolVersion(); got != revision {
			b.Fatalf("andon negotiated %q, pinned %q", got, revision)
		}
		return andonBench{c}
	case "gosdk":
		cmd := exec.Command(exe)
		cmd.Env = env
		cmd.Stderr = tWriter{b}
		client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &gosdk.CommandTransport{Command: cmd}, &gosdk.ClientSessionOptions{ProtocolVersion: revision})
		if err != nil {
			b.Fatalf("go-sdk connecting to the go-sdk server: %v", err)
		}
		b.Cleanup(func() {
			if err := cs.Close(); err != nil {
				b.Errorf("closing go-sdk's session: %v", err)
			}
		})
		if got := cs.InitializeResult().ProtocolVersion; got != revision {
			b.Fatalf("go-sdk negotiated %q, asked for %q", got, revision)
		}
		return gosdkBench{cs}
	case "mcpgo":
		t := mcpgotransport.NewStdioWithOptions(exe, env, nil, mcpgotransport.WithCommandStderrWriter(tWriter{b}))
		c := mcpgoclient.NewClient(t, mcpgoclient.WithProtocolVersion(revision))
		if err := c.Start(context.Background()); err != nil {
			b.Fatalf("mcp-go starting the go-sdk server: %v", err)
		}
		b.Cleanup(func() {
			if err := c.Close(); err != nil {
				b.Errorf("closing mcp-go's client: %v", err)
			}
		})
		res, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
			ProtocolVersion: revision,
			ClientInfo:      mcpgo.Implementation{Name: "interop-mcpgo-client", Version: "1"},
		}})
		if err != nil {
			b.Fatalf("mcp-go connecting to the go-sdk server: %v", err)
		}
		if res.ProtocolVersion != revision {
			b.Fatalf("mcp-go negotiated %q, pinned %q", res.ProtocolVersion, revision)
		}
		return mcpgoBench{c}
	case "floor":
		return startFloorStdio(b, revision, env...)
	}
	b.Fatalf("unknown client %q", kind)
	return nil
}

// forEachClient runs bench as the sub-benchmarks client/stdio/revision, with
// a connection of its own that lives as long as the sub-benchmark. With
// events, the server reports the slow tool's events to a hub of the
// sub-benchmark's own, which bench gets; without, the hub is nil. The
// floor takes part only in benchmarks without events: it cancels nothing.
func forEachClient(b *testing.B, events bool, bench func(b *testing.B, c benchClient, hub *eventHub)) {
	for _, kind := range benchClients {
		b.Run(kind+"/stdio", func(b *testing.B) {
			if kind == "floor" && events {
				b.Skip(errFloorNA)
			}
			for _, rev := range revisions {
				b.Run(rev, func(b *testing.B) {
					var hub *eventHub
					var env []string
					if events {
						hub = newEventHub(b)
						env = append(env, eventsSockEnv+"="+hub.path)
					}
					bench(b, startBench(b, kind, rev, env...), hub)
				})
			}
		})
	}
}

// processCost is what this process has spent so far: CPU time, user and
// system, and voluntary context switches — each a thread of the process
// going to sleep (in a futex, epoll_wait or nanosleep), so it counts the
// wake-ups a client's hand-offs between goroutines cost.
type processCost struct {
	cpu      time.Duration
	switches int64
}

func costSoFar(b *testing.B) processCost {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return processCost{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), switches: int64(ru.Nvcsw)}
}

// reportSince reports the client's CPU time and context switches per
// operation since c.
func (c processCost) reportSince(b *testing.B) {
	b.Helper()
	now := costSoFar(b)
	b.ReportMetric(float64((now.cpu-c.cpu).Nanoseconds())/1e3/float64(b.N), "client-cpu-µs/op")
	b.ReportMetric(float64(now.switches-c.switches)/float64(b.N), "client-ctxsw/op")
}

// reportPercentiles reports the 50th and 99th percentiles of d, in µs.
func reportPercentiles(b *testing.B, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(p * float64(len(d)-1))
		return float64(d[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkCallRoundTrip measures a call of the echo tool, from CallTool to
// its return, with 1 and 64 callers sharing one connection. With one caller
// it also reports the latency percentiles. client-cpu-µs/op is the CPU time
// (user and system) the benchmark's process spent per call: the client's
// cost alone, since the server is another process, and far less disturbed
// than wall time by whatever else the machine runs.
func BenchmarkCallRoundTrip(b *testing.B) {
	forEachClient(b, false, func(b *testing.B, c benchClient, _ *eventHub) {
		args := map[string]any{"text": "hello"}
		for _, callers := range []int{1, 64} {
			b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
				if _, raw := c.(*floorStdio); raw && callers > 1 {
					b.Skip("n/a: the floor has one request on the wire at a time")
				}
				ctx := context.Background()
				for range 20 { // warm up, untimed
					if err := c.call(ctx, "echo", args); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				cost := costSoFar(b)
				if callers == 1 {
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for range b.N {
						start := time.Now()
						if err := c.call(ctx, "echo", args); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(start))
					}
					b.StopTimer()
					reportPercentiles(b, lat)
				} else {
					var next atomic.Int64
					var wg sync.WaitGroup
					b.ResetTimer()
					for range callers {
						wg.Go(func() {
							for next.Add(1) <= int64(b.N) {
								if err := c.call(ctx, "echo", args); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
				}
				cost.reportSince(b)
			})
		}
	})
}

// BenchmarkCancelToReturn measures how soon a caller gets control back after
// it cancels a call in flight: from cancel() until CallTool has returned, as
// the calling goroutine sees it. Each call is cancelled only once the server
// reports that the handler is running, and the next starts only once the
// server reports that the handler saw the cancellation; neither wait is
// timed.
func BenchmarkCancelToReturn(b *testing.B) {
	forEachClient(b, true, func(b *testing.B, c benchClient, hub *eventHub) {
		cancelLoop(b, c, hub, false)
	})
}

// BenchmarkServerSeesCancel measures how soon the server's handler sees a
// call's cancellation: from cancel() until the handler's ctx.Done fires,
// as the handler timestamps it (both ends read the same wall clock). The
// timed region of ns/op ends later, when the handler's report reaches the
// benchmark over a unix socket; the percentiles are the handler's own times.
func BenchmarkServerSeesCancel(b *testing.B) {
	forEachClient(b, true, func(b *testing.B, c benchClient, hub *eventHub) {
		cancelLoop(b, c, hub, true)
	})
}

// cancelLoop runs b.N cancelled calls of the slow tool on c and reports the
// percentiles of the client's return (serverSide false) or of the handler
// seeing the cancellation (serverSide true).
func cancelLoop(b *testing.B, c benchClient, hub *eventHub, serverSide bool) {
	cancelLoopWith(b, c, hub, serverSide, true)
}

// neverCancelledMS is how long the slow tool sleeps in a cancel loop whose
// server never sees the cancel: long enough that the cancel comes first,
// short enough to wait for every handler to finish.
const neverCancelledMS = 20

// cancelLoopWith is cancelLoop for a server that sees the cancel (cancels)
// or never does. In the latter case the handler sleeps neverCancelledMS and
// the next call starts only once it has finished (untimed), so that no
// orphaned handler runs during a later sample. A call the server answered
// before the cancel (the machine stalled for neverCancelledMS) is not a
// sample, and is counted as raced/op.
func cancelLoopWith(b *testing.B, c benchClient, hub *eventHub, serverSide, cancels bool) {
	b.Helper()
	if serverSide && !cancels {
		b.Fatal("the server never sees this cancel")
	}
	type result struct {
		at  time.Time
		err error
	}
	run := hub.nextRun()
	lat := make([]time.Duration, 0, b.N)
	raced := 0
	b.ResetTimer()
	b.StopTimer()
	for i := range b.N {
		tag := "r" + strconv.Itoa(run) + "-" + strconv.Itoa(i)
		args := map[string]any{"tag": tag}
		if !cancels {
			args["ms"] = neverCancelledMS
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan result, 1)
		go func() {
			err := c.call(ctx, "slow", args)
			done <- result{time.Now(), err}
		}()
		hub.wait(b, evStarted, tag)

		b.StartTimer()
		start := time.Now()
		cancel()
		var seen serverEvent
		var r result
		switch {
		case serverSide:
			seen = hub.wait(b, evCancelled, tag)
			b.StopTimer()
			r = <-done
		case cancels:
			r = <-done
			b.StopTimer()
			seen = hub.wait(b, evCancelled, tag)
		default:
			r = <-done
			b.StopTimer()
			hub.wait(b, evFinished, tag)
		}

		if !cancels && r.err == nil {
			raced++
			continue
		}
		if !c.isCancelled(r.err) {
			b.Fatalf("call %s after cancel returned %v, want a cancellation", tag, r.err)
		}
		if serverSide {
			lat = append(lat, time.Duration(seen.at-start.UnixNano()))
		} else {
			lat = append(lat, r.at.Sub(start))
		}
	}
	reportPercentiles(b, lat)
	if !cancels {
		b.ReportMetric(float64(raced)/float64(b.N), "raced/op")
	}
}

// serverEvent is an event the slow tool reported.
type serverEvent struct {
	kind, tag string
	at        int64 // the server's time.Now().UnixNano() when it happened
}

// eventHub receives the slow tool's events over a unix socket.
type eventHub struct {
	path   string
	ln     net.Listener
	events chan serverEvent
	quit   chan struct{} // closed when the hub shuts down
	runs   atomic.Int64
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func newEventHub(b *testing.B) *eventHub {
	b.Helper()
	// A short directory: a unix socket path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "andon-iop")
	if err != nil {
		b.Fatal(err)
	}
	h := &eventHub{path: filepath.Join(dir, "events"), events: make(chan serverEvent, 1024), quit: make(chan struct{})}
	h.ln, err = net.Listen("unix", h.path)
	if err != nil {
		os.RemoveAll(dir)
		b.Fatal(err)
	}
	h.wg.Go(h.accept)
	b.Cleanup(func() {
		close(h.quit)
		h.ln.Close()
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
		h.wg.Wait()
		os.RemoveAll(dir)
	})
	return h
}

func (h *eventHub) accept() {
	for {
		conn, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, conn)
		h.mu.Unlock()
		h.wg.Go(func() { h.read(conn) })
	}
}

func (h *eventHub) read(conn net.Conn) {
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		select {
		case h.events <- serverEvent{kind: f[0], tag: f[1], at: at}:
		case <-h.quit:
			return
		}
	}
}

// nextRun numbers the runs of a benchmark function on one hub, so that the
// tags of one run never match another's events.
func (h *eventHub) nextRun() int { return int(h.runs.Add(1)) }

// wait returns the event kind for tag, discarding others, or fails b.
func (h *eventHub) wait(b *testing.B, kind, tag string) serverEvent {
	b.Helper()
	timeout := time.NewTimer(pollDeadline)
	defer timeout.Stop()
	for {
		select {
		case ev := <-h.events:
			if ev.kind == kind && ev.tag == tag {
				return ev
			}
		case <-timeout.C:
			b.Fatalf("the server did not report %s %s within %v", kind, tag, pollDeadline)
		}
	}
}

// BenchmarkCallToolAllocs measures a client in process, over net.Pipe, so
// that its allocations per call can be read off without a subprocess.
// Against mcptest (andon only), the count includes the mcptest server's
// allocations, since it runs in the same process. Against canned, a minimal
// server that answers from prepared bytes and allocates next to nothing,
// the count is the client's alone, and the time is mostly the client's
// too, so andon and go-sdk can be compared on CPU cost as well.
func BenchmarkCallToolAllocs(b *testing.B) {
	canned := func(b *testing.B) net.Conn {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveCanned(server)
		}()
		b.Cleanup(func() { <-done })
		return client
	}
	andon := func(b *testing.B, rev string, t mcp.Transport) benchClient {
		c, err := mcp.Connect(context.Background(), t, &mcp.ClientOptions{ProtocolVersion: rev})
		if err != nil {
			b.Fatal(err)
		}
		// Registered after the server's cleanup, so it runs first.
		b.Cleanup(func() {
			if err := c.Close(); err != nil {
				b.Errorf("closing the client: %v", err)
			}
		})
		return andonBench{c}
	}
	cases := []struct {
		name    string
		connect func(b *testing.B, rev string) benchClient
	}{
		{"andon/mcptest", func(b *testing.B, rev string) benchClient {
			s := mcptest.NewServer(nil)
			b.Cleanup(s.Close)
			return andon(b, rev, s.Transport())
		}},
		{"andon/canned", func(b *testing.B, rev string) benchClient {
			return andon(b, rev, mcp.Stream(canned(b)))
		}},
		{"gosdk/canned", func(b *testing.B, rev string) benchClient {
			conn := canned(b)
			client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &gosdk.IOTransport{Reader: conn, Writer: conn}, &gosdk.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := cs.Close(); err != nil {
					b.Errorf("closing the session: %v", err)
				}
			})
			if got := cs.InitializeResult().ProtocolVersion; got != rev {
				b.Fatalf("go-sdk negotiated %q, asked for %q", got, rev)
			}
			return gosdkBench{cs}
		}},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			for _, rev := range revisions {
				b.Run(rev, func(b *testing.B) {
					c := cs.connect(b, rev)
					ctx := context.Background()
					args := map[string]any{"text": "hello"}
					for range 20 {
						if err := c.call(ctx, "echo", args); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := c.call(ctx, "echo", args); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// serveCanned is a minimal MCP server for measuring the client alone: it
// answers server/discover, initialize and every other request (as tools/call
// of echo) from prepared bytes, copying only the request id, and ignores
// notifications. It returns when conn is closed.
func serveCanned(conn net.Conn) {
	defer conn.Close()
	const (
		discover   = `"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"canned","version":"1"}}}}` + "\n"
		initialize = `"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}}` + "\n"
		echo       = `"result":{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}` + "\n"
	)
	r := bufio.NewReaderSize(conn, 64<<10)
	out := make([]byte, 0, 512)
	idKey := []byte(`"id":`)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		i := bytes.Index(line, idKey)
		if i < 0 {
			continue // a notification
		}
		id := line[i+len(idKey):]
		n := 0
		for n < len(id) && id[n] >= '0' && id[n] <= '9' {
			n++
		}
		out = append(out[:0], `{"jsonrpc":"2.0","id":`...)
		out = append(out, id[:n]...)
		out = append(out, ',')
		switch {
		case bytes.Contains(line, []byte(`"method":"server/discover"`)):
			out = append(out, discover...)
		case bytes.Contains(line, []byte(`"method":"initialize"`)):
			out = append(out, initialize...)
		default:
			out = append(out, echo...)
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// The HTTP benchmarks measure andon's client, go-sdk v1.8.0's and mcp-go
// v1.2.1's against the same server per HTTP generation: go-sdk's handlers
// (runGoSDKHTTPServer), in a subprocess of their own on 127.0.0.1, a fresh
// one per generation and client. Every client is pinned to the
// generation's revision and gets an http.Client of its own with the same
// settings; none opens a standalone GET stream.

type mcpgoBench struct{ c *mcpgoclient.Client }

func (m mcpgoBench) call(ctx context.Context, name string, args map[string]any) error {
	res, err := m.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}})
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error", name)
	}
	return err
}

func (mcpgoBench) isCancelled(err error) bool { return errors.Is(err, context.Canceled) }

// httpGen is an HTTP generation: the go-sdk handler that serves it and the
// revision every client is pinned to.
type httpGen struct{ mode, revision string }

func (g httpGen) name() string { return "http-" + g.mode + "/" + g.revision }

var httpGens = []httpGen{
	{httpModeStateless, mcp.Version20260728},
	{httpModeStateful, mcp.Version20251125},
	{httpModeSSE, mcp.Version20241105},
	{httpModeSSE, mcp.Version20251125},
}

// httpBenchClients are the clients compared over HTTP, in the order they
// run; the floor (floor_test.go) is the wire alone.
var httpBenchClients = []string{"andon", "gosdk", "mcpgo", "floor"}

// httpCancelSeen reports whether go-sdk's handler for gen sees client kind's
// cancellation, and if not, why.
func httpCancelSeen(kind string, gen httpGen) (bool, string) {
	if kind == "mcpgo" && gen.mode != httpModeStateless {
		return false, "mcp-go's client sends no notifications/cancelled over HTTP (client/client.go:311-313), and go-sdk's " +
			gen.mode + " handler does not cancel a handler when the client disconnects"
	}
	return true, ""
}

// startGoSDKHTTP starts a go-sdk HTTP server subprocess serving mode, with
// the extra environment env, and returns its URL. It ends with b.
func startGoSDKHTTP(b *testing.B, mode string, env ...string) string {
	b.Helper()
	exe, env := selfCommand(b, roleGoSDKHTTPServer, append(env, httpModeEnv+"="+mode)...)
	cmd := exec.Command(exe)
	cmd.Env = env
	cmd.Stderr = tWriter{b}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(exited)
	}()
	b.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(pollDeadline):
			cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case url := <-lines:
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			b.Fatalf("the go-sdk HTTP server said %q, not its URL", url)
		}
		return url
	case <-time.After(pollDeadline):
		b.Fatal("the go-sdk HTTP server did not start")
		return ""
	}
}

// benchHTTPClient returns an http.Client of its own, which counts the TCP
// connections it dials in dials; every client under test gets the same
// settings.
func benchHTTPClient(b *testing.B, dials *atomic.Int64) *http.Client {
	d := &net.Dialer{}
	tr := &http.Transport{
		MaxIdleConns: 16, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// startHTTPBench connects the client named kind to a fresh go-sdk server
// for gen, pinned to gen's revision; dials counts the TCP connections the
// client makes. Both end with b.
func startHTTPBench(b *testing.B, kind string, gen httpGen, dials *atomic.Int64, env ...string) benchClient {
	b.Helper()
	url := startGoSDKHTTP(b, gen.mode, env...)
	if kind == "floor" {
		return startFloorHTTP(b, gen, url, dials)
	}
	hc := benchHTTPClient(b, dials)
	ctx, cancel := context.WithTimeout(context.Background(), pollDeadline)
	defer cancel()
	switch kind {
	case "andon":
		c, err := mcp.Connect(ctx, mcp.HTTP(url, hc), &mcp.ClientOptions{ProtocolVersion: gen.revision, Logger: testLogger(b)})
		if err != nil {
			b.Fatalf("andon connecting to go-sdk %s: %v", gen.mode, err)
		}
		b.Cleanup(func() {
			if err := c.Close(); err != nil {
				b.Errorf("closing andon's client: %v", err)
			}
		})
		if got := c.ProtocolVersion(); got != gen.revision {
			b.Fatalf("andon negotiated %q, pinned %q", got, gen.revision)
		}
		return andonBench{c}
	case "gosdk":
		var t gosdk.Transport = &gosdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
		if gen.mode == httpModeSSE {
			t = &gosdk.SSEClientTransport{Endpoint: url, HTTPClient: hc}
		}
		client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
		// Not ctx: go-sdk's SSE transport ties its event stream to the
		// context Connect gets (peer-sdks.md bug (c)).
		cs, err := client.Connect(context.Background(), t, &gosdk.ClientSessionOptions{ProtocolVersion: gen.revision})
		if err != nil {
			b.Fatalf("go-sdk connecting to go-sdk %s: %v", gen.mode, err)
		}
		b.Cleanup(func() {
			if err := cs.Close(); err != nil {
				b.Errorf("closing go-sdk's session: %v", err)
			}
		})
		if got := cs.InitializeResult().ProtocolVersion; got != gen.revision {
			b.Fatalf("go-sdk negotiated %q, asked for %q", got, gen.revision)
		}
		return gosdkBench{cs}
	case "mcpgo":
		var t mcpgotransport.Interface
		var err error
		if gen.mode == httpModeSSE {
			t, err = mcpgotransport.NewSSE(url, mcpgotransport.WithHTTPClient(hc))
		} else {
			t, err = mcpgotransport.NewStreamableHTTP(url, mcpgotransport.WithHTTPBasicClient(hc))
		}
		if err != nil {
			b.Fatal(err)
		}
		// Pinned: unpinned, mcp-go takes go-sdk's stateful server for a
		// 2026-07-28 server and every call fails (peer-sdks.md bug (b)).
		c := mcpgoclient.NewClient(t, mcpgoclient.WithProtocolVersion(gen.revision))
		if err := c.Start(context.Background()); err != nil {
			b.Fatalf("mcp-go starting its %s transport: %v", gen.mode, err)
		}
		b.Cleanup(func() {
			if err := c.Close(); err != nil {
				b.Errorf("closing mcp-go's client: %v", err)
			}
		})
		res, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
			ProtocolVersion: gen.revision,
			ClientInfo:      mcpgo.Implementation{Name: "interop-mcpgo-client", Version: "1"},
		}})
		if err != nil {
			b.Fatalf("mcp-go connecting to go-sdk %s: %v", gen.mode, err)
		}
		if res.ProtocolVersion != gen.revision {
			b.Fatalf("mcp-go negotiated %q, pinned %q", res.ProtocolVersion, gen.revision)
		}
		return mcpgoBench{c}
	}
	b.Fatalf("unknown client %q", kind)
	return nil
}

// forEachHTTPClient runs bench as the sub-benchmarks http-MODE/REVISION/CLIENT
// (the clients of one generation run back to back, so their ratios are
// taken seconds apart), each with a server and a connection of its own. With
// events, the server reports the slow tool's events to a hub of the
// sub-benchmark's own. dials counts the client's TCP connections.
func forEachHTTPClient(b *testing.B, events bool, bench func(b *testing.B, kind string, gen httpGen, c benchClient, hub *eventHub, dials *atomic.Int64)) {
	for _, gen := range httpGens {
		b.Run(gen.name(), func(b *testing.B) {
			for _, kind := range httpBenchClients {
				b.Run(kind, func(b *testing.B) {
					if kind == "floor" && events {
						b.Skip(errFloorNA)
					}
					var hub *eventHub
					var env []string
					if events {
						hub = newEventHub(b)
						env = append(env, eventsSockEnv+"="+hub.path)
					}
					dials := new(atomic.Int64)
					bench(b, kind, gen, startHTTPBench(b, kind, gen, dials, env...), hub, dials)
				})
			}
		})
	}
}

// BenchmarkHTTPCallRoundTrip measures a call of the echo tool over HTTP,
// from CallTool to its return, one caller at a time, with its latency
// percentiles, the client process's CPU time per call (the server is
// another process), and the TCP connections the client dialled per call.
func BenchmarkHTTPCallRoundTrip(b *testing.B) {
	forEachHTTPClient(b, false, func(b *testing.B, _ string, _ httpGen, c benchClient, _ *eventHub, dials *atomic.Int64) {
		ctx := context.Background()
		args := map[string]any{"text": "hello"}
		for range 20 { // warm up, untimed
			if err := c.call(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		cost := costSoFar(b)
		dialled := dials.Load()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if err := c.call(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, lat)
		cost.reportSince(b)
		b.ReportMetric(float64(dials.Load()-dialled)/float64(b.N), "dials/op")
	})
}

// BenchmarkHTTPCancelToReturn is BenchmarkCancelToReturn over HTTP. Against
// a server that never sees a client's cancel, the handler sleeps
// neverCancelledMS and the next call waits for it to finish (untimed).
// dials/op counts the TCP connections the client dialled per cancelled
// call (for the call, and for a notification POST).
func BenchmarkHTTPCancelToReturn(b *testing.B) {
	forEachHTTPClient(b, true, func(b *testing.B, kind string, gen httpGen, c benchClient, hub *eventHub, dials *atomic.Int64) {
		seen, _ := httpCancelSeen(kind, gen)
		dialled := dials.Load()
		cancelLoopWith(b, c, hub, false, seen)
		b.ReportMetric(float64(dials.Load()-dialled)/float64(b.N), "dials/op")
	})
}

// BenchmarkHTTPServerSeesCancel is BenchmarkServerSeesCancel over HTTP, for
// every client whose cancel the server can see; the others are skipped,
// with the reason.
func BenchmarkHTTPServerSeesCancel(b *testing.B) {
	forEachHTTPClient(b, true, func(b *testing.B, kind string, gen httpGen, c benchClient, hub *eventHub, dials *atomic.Int64) {
		if seen, why := httpCancelSeen(kind, gen); !seen {
			b.Skip("n/a: " + why)
		}
		dialled := dials.Load()
		cancelLoop(b, c, hub, true)
		b.ReportMetric(float64(dials.Load()-dialled)/float64(b.N), "dials/op")
	})
}
