package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/gateway"
	"github.com/andonhq/andon/internal/nodepeer"
)

// The downstream clients of the interop matrix: go-sdk's, mcp-go's and the
// TypeScript SDK's, each over stdio (an in-process pipe to the gateway's
// ServeStream; the TypeScript client is a node process whose stdin and
// stdout are that stream) and over Streamable HTTP (the gateway's handler
// on a loopback httptest server).

// downstreamClient is one client of the matrix.
type downstreamClient struct {
	name    string
	http    bool
	connect func(t *testing.T, gw *gateway.Gateway, http bool, plan gatewayPlan) gatewayDriver
}

// gatewayPlan is what a client calls: the gateway's names of the upstream
// tools and their arguments.
type gatewayPlan struct {
	echo, slow toolCall
}

// gatewayDriver drives one connected client.
type gatewayDriver interface {
	// tools lists the gateway's tools.
	tools(t *testing.T) []string
	// echo calls the echo tool and returns its result's text.
	echo(t *testing.T) string
	// startSlow calls the slow tool, which runs until cancelled.
	startSlow(t *testing.T)
	// cancelSlow cancels the slow call as the client's API does (a ctx
	// ended, an AbortSignal aborted) and returns how the call ended for
	// the client, failing t unless it ended as cancelled.
	cancelSlow(t *testing.T) string
	// sent is what the client sent the gateway.
	sent() *downLog
}

// downstreamClients are the matrix's clients.
var downstreamClients = []downstreamClient{
	{name: "go-sdk stdio", connect: connectGoSDK},
	{name: "go-sdk http", http: true, connect: connectGoSDK},
	{name: "mcp-go stdio", connect: connectMCPGo},
	{name: "mcp-go http", http: true, connect: connectMCPGo},
	{name: "ts-sdk stdio", connect: connectTS},
	{name: "ts-sdk http", http: true, connect: connectTS},
}

// serveGateway serves gw over an in-process pipe (the client's end is
// returned) or on a loopback httptest server (its URL is returned), and
// records what the client sends in the returned log.
func serveGateway(t *testing.T, gw *gateway.Gateway, http bool) (net.Conn, string, *downLog) {
	t.Helper()
	log := &downLog{}
	if http {
		hs := httptest.NewServer(log.handler(gw))
		t.Cleanup(hs.Close)
		return nil, hs.URL, log
	}
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		gw.ServeStream(context.Background(), io.TeeReader(server, &log.msgs), server)
	}()
	t.Cleanup(func() { client.Close(); server.Close(); <-done })
	return client, "", log
}

// downLog is what a client sent the gateway: its messages, and over HTTP
// the revision headers and the requests whose stream it closed before the
// answer.
type downLog struct {
	msgs stdinLog

	mu       sync.Mutex
	versions []string // MCP-Protocol-Version headers, first seen first
	closed   []string // methods of requests whose client went away
}

func (l *downLog) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		l.msgs.Write(append(bytes.TrimSpace(body), '\n'))
		var m stdinMsg
		_ = json.Unmarshal(body, &m)
		l.mu.Lock()
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(l.versions, v) {
			l.versions = append(l.versions, v)
		}
		l.mu.Unlock()
		h.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			l.mu.Lock()
			l.closed = append(l.closed, m.Method)
			l.mu.Unlock()
		}
	})
}

// sentCancel reports whether the client sent notifications/cancelled.
func (l *downLog) sentCancel() bool {
	_, ok := l.msgs.find(func(m stdinMsg) bool { return m.Method == "notifications/cancelled" })
	return ok
}

// String says how the client spoke and cancelled, for the test's log.
func (l *downLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	how := []string{}
	if l.sentCancel() {
		how = append(how, "notifications/cancelled")
	}
	if slices.Contains(l.closed, "tools/call") {
		how = append(how, "closing the call's stream")
	}
	return fmt.Sprintf("%s, cancelled by %s", l.msgs.revision(), strings.Join(how, " + "))
}

// slowCall is a slow call in flight in a Go client.
type slowCall struct {
	cancel context.CancelFunc
	done   chan error
}

func (s *slowCall) start(call func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- call(ctx) }()
}

func (s *slowCall) end(t *testing.T) string {
	t.Helper()
	s.cancel()
	err := <-s.done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the slow call ended with %v, want context.Canceled", err)
	}
	return "context.Canceled"
}

// go-sdk v1.8.0.

type gosdkDriver struct {
	cs   *gosdk.ClientSession
	plan gatewayPlan
	slow slowCall
	log  *downLog
}

func connectGoSDK(t *testing.T, gw *gateway.Gateway, http bool, plan gatewayPlan) gatewayDriver {
	t.Helper()
	conn, url, log := serveGateway(t, gw, http)
	var tr gosdk.Transport = &gosdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if conn != nil {
		tr = &gosdk.IOTransport{Reader: conn, Writer: conn}
	}
	client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), pollDeadline)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("go-sdk connecting to the gateway: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &gosdkDriver{cs: cs, plan: plan, log: log}
}

func (d *gosdkDriver) tools(t *testing.T) []string {
	t.Helper()
	res, err := d.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("go-sdk tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (d *gosdkDriver) echo(t *testing.T) string {
	t.Helper()
	res, err := d.cs.CallTool(t.Context(), &gosdk.CallToolParams{Name: d.plan.echo.tool, Arguments: d.plan.echo.args})
	if err != nil {
		t.Fatalf("go-sdk tools/call %s: %v", d.plan.echo.tool, err)
	}
	return gosdkText(res)
}

func gosdkText(res *gosdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*gosdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func (d *gosdkDriver) startSlow(t *testing.T) {
	d.slow.start(func(ctx context.Context) error {
		_, err := d.cs.CallTool(ctx, &gosdk.CallToolParams{Name: d.plan.slow.tool, Arguments: d.plan.slow.args})
		return err
	})
}

func (d *gosdkDriver) cancelSlow(t *testing.T) string { return d.slow.end(t) }

// mcp-go v1.2.1.

type mcpgoDriver struct {
	c    *mcpgoclient.Client
	plan gatewayPlan
	slow slowCall
	log  *downLog
}

func connectMCPGo(t *testing.T, gw *gateway.Gateway, http bool, plan gatewayPlan) gatewayDriver {
	t.Helper()
	conn, url, log := serveGateway(t, gw, http)
	var tr mcpgotransport.Interface
	if conn != nil {
		tr = mcpgotransport.NewIO(conn, conn, io.NopCloser(strings.NewReader("")))
	} else {
		h, err := mcpgotransport.NewStreamableHTTP(url)
		if err != nil {
			t.Fatal(err)
		}
		tr = h
	}
	c := mcpgoclient.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("mcp-go starting: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), pollDeadline)
	defer cancel()
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "interop-mcpgo-client", Version: "1"},
	}}); err != nil {
		t.Fatalf("mcp-go connecting to the gateway: %v", err)
	}
	return &mcpgoDriver{c: c, plan: plan, log: log}
}

func (d *mcpgoDriver) tools(t *testing.T) []string {
	t.Helper()
	res, err := d.c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("mcp-go tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (d *mcpgoDriver) echo(t *testing.T) string {
	t.Helper()
	res, err := d.c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: d.plan.echo.tool, Arguments: d.plan.echo.args}})
	if err != nil {
		t.Fatalf("mcp-go tools/call %s: %v", d.plan.echo.tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func (d *mcpgoDriver) startSlow(t *testing.T) {
	d.slow.start(func(ctx context.Context) error {
		_, err := d.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: d.plan.slow.tool, Arguments: d.plan.slow.args}})
		return err
	})
}

func (d *mcpgoDriver) cancelSlow(t *testing.T) string { return d.slow.end(t) }

// The TypeScript SDK (@modelcontextprotocol/sdk), as a node process
// running testdata/gateway_ts_client.mjs.

type tsDriver struct {
	control io.WriteCloser
	logs    *logLines
	seen    int // how much of logs the driver has read
	log     *downLog
}

func connectTS(t *testing.T, gw *gateway.Gateway, http bool, plan gatewayPlan) gatewayDriver {
	t.Helper()
	modules := nodepeer.Install(t, nodepeer.ServerEverything, nodepeer.SDK, nodepeer.OIDCProvider)
	dir := nodeScriptDir(t, modules, "gateway_ts_client.mjs")
	type call struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	planJSON, _ := json.Marshal(map[string]call{"echo": {plan.echo.tool, plan.echo.args}, "slow": {plan.slow.tool, plan.slow.args}})
	target, log := "stdio", &downLog{}
	if http {
		_, target, log = serveGateway(t, gw, true)
	}
	cmd := exec.Command(nodepeer.Node(t), "gateway_ts_client.mjs", target)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANDON_GW_PLAN="+string(planJSON))
	logs := &logLines{}
	cmd.Stderr = logs
	var stdin io.WriteCloser
	var stdout io.ReadCloser
	if !http {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if stdout, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	cr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{cr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cr.Close()
	// served is closed once the gateway has stopped reading the process's
	// stdout (at once over HTTP), after which it may be waited for.
	served := make(chan struct{})
	if http {
		close(served)
	} else {
		go func() {
			defer close(served)
			gw.ServeStream(context.Background(), io.TeeReader(stdout, &log.msgs), stdin)
		}()
	}
	t.Cleanup(func() {
		cw.Close() // its commands end, and it exits
		exited := make(chan struct{})
		go func() {
			<-served
			cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(nodeBudget):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the TypeScript client's stderr:\n%s", logs.String())
		}
	})
	d := &tsDriver{control: cw, logs: logs, log: log}
	d.await(t, "connected")
	return d
}

// await waits for the client's next report of what and returns its JSON.
func (d *tsDriver) await(t *testing.T, what string) json.RawMessage {
	t.Helper()
	prefix := "ANDON_TS " + what + " "
	var found json.RawMessage
	deadline := time.Now().Add(nodeBudget)
	for !func(s string) bool {
		lines := strings.Split(s[d.seen:], "\n")
		off := d.seen
		for _, line := range lines {
			if strings.HasPrefix(line, "ANDON_TS error ") {
				t.Fatalf("the TypeScript client failed: %s", line)
			}
			if v, ok := strings.CutPrefix(line, prefix); ok {
				found = json.RawMessage(v)
				d.seen = off + len(line)
				return true
			}
			off += len(line) + 1
		}
		return false
	}(d.logs.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the TypeScript client never reported %s; its stderr:\n%s", what, d.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return found
}

func (d *tsDriver) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := fmt.Fprintln(d.control, cmd); err != nil {
		t.Fatalf("telling the TypeScript client %s: %v", cmd, err)
	}
}

func (d *tsDriver) tools(t *testing.T) []string {
	t.Helper()
	d.send(t, "tools")
	var names []string
	if err := json.Unmarshal(d.await(t, "tools"), &names); err != nil {
		t.Fatal(err)
	}
	return names
}

func (d *tsDriver) echo(t *testing.T) string {
	t.Helper()
	d.send(t, "echo")
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(d.await(t, "echo"), &res); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func (d *tsDriver) startSlow(t *testing.T) {
	t.Helper()
	d.send(t, "slow")
	d.await(t, "slow-sent")
}

func (d *tsDriver) cancelSlow(t *testing.T) string {
	t.Helper()
	d.send(t, "abort")
	var e struct {
		Name, Message string
	}
	if err := json.Unmarshal(d.await(t, "slow-error"), &e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Message, "aborted") {
		t.Fatalf("the slow call ended with %+v, want the abort", e)
	}
	return "rejected: " + e.Message
}

func (d *gosdkDriver) sent() *downLog { return d.log }
func (d *mcpgoDriver) sent() *downLog { return d.log }
func (d *tsDriver) sent() *downLog    { return d.log }
