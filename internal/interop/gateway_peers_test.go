package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/internal/nodepeer"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The upstream servers the gateway fronts in the interop matrix: over
// stdio, go-sdk's and mcp-go's servers and
// @modelcontextprotocol/server-everything as real subprocesses, and
// mcptest in this process; over Streamable HTTP, go-sdk's stateless
// handler (2026-07-28, PropagateRequestCancellation) and mcp-go's
// streamable server, on loopback httptest servers. What each saw is read
// where it saw it: the messages that reached its stdin or its HTTP
// endpoint, whether the call's response stream was closed on it, and
// where the peer can tell, its tool handler's context ending.

// runMCPGoServer serves the mcp-go server over stdin and stdout until stdin
// ends, its slow tool reporting to the file eventsFileEnv names, and
// returns the exit status.
func runMCPGoServer(ctx context.Context) int {
	sink := &eventSink{}
	if path := os.Getenv(eventsFileEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "interop server:", err)
			return 2
		}
		defer f.Close()
		sink.file = f
	}
	err := mcpgoserver.NewStdioServer(newMCPGoServer(sink)).Listen(ctx, os.Stdin, os.Stdout)
	if err != nil && !strings.Contains(err.Error(), "EOF") && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "interop server:", err)
		return 1
	}
	return 0
}

// stdinMsg is a JSON-RPC message as far as the matrix reads it.
type stdinMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string          `json:"name"`
		RequestID       json.RawMessage `json:"requestId"`
		ProtocolVersion string          `json:"protocolVersion"` // initialize
		Meta            struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

// stdinLog records the messages written to a peer's stdin, one per line.
type stdinLog struct {
	mu      sync.Mutex
	partial []byte
	msgs    []stdinMsg
}

func (l *stdinLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		var m stdinMsg
		if json.Unmarshal(l.partial[:i], &m) == nil {
			l.msgs = append(l.msgs, m)
		}
		l.partial = l.partial[i+1:]
	}
}

// revision says which revision the messages were in: initialize's, or
// the _meta of 2026-07-28 requests.
func (l *stdinLog) revision() string {
	if m, ok := l.find(func(m stdinMsg) bool { return m.Method == "initialize" }); ok {
		return m.Params.ProtocolVersion + " (initialize)"
	}
	if m, ok := l.find(func(m stdinMsg) bool { return m.Params.Meta.ProtocolVersion != "" }); ok {
		return m.Params.Meta.ProtocolVersion + " (_meta)"
	}
	return "?"
}

// find returns the first message that match accepts.
func (l *stdinLog) find(match func(stdinMsg) bool) (stdinMsg, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if match(m) {
			return m, true
		}
	}
	return stdinMsg{}, false
}

// wait polls until a message that match accepts has reached the peer.
func (l *stdinLog) wait(t *testing.T, what string, match func(stdinMsg) bool) stdinMsg {
	t.Helper()
	for deadline := time.Now().Add(nodeBudget); ; time.Sleep(5 * time.Millisecond) {
		if m, ok := l.find(match); ok {
			return m
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("the upstream server never received %s; it received %+v", what, l.msgs)
		}
	}
}

// waitCall waits for the tools/call of tool and returns its request id.
func (l *stdinLog) waitCall(t *testing.T, tool string) json.RawMessage {
	t.Helper()
	m := l.wait(t, "tools/call "+tool, func(m stdinMsg) bool { return m.Method == "tools/call" && m.Params.Name == tool })
	return m.ID
}

// waitCancelled waits for the notifications/cancelled naming request id.
func (l *stdinLog) waitCancelled(t *testing.T, id json.RawMessage) {
	t.Helper()
	l.wait(t, "notifications/cancelled for request "+string(id), func(m stdinMsg) bool {
		return m.Method == "notifications/cancelled" && bytes.Equal(bytes.TrimSpace(m.Params.RequestID), bytes.TrimSpace(id))
	})
}

// toolCall is a call the matrix makes of an upstream tool.
type toolCall struct {
	tool string         // its name on the upstream server
	args map[string]any // its arguments
	want string         // the text its result carries (echo)
}

// upstreamPeer is one upstream server of the matrix.
type upstreamPeer struct {
	name string
	echo toolCall // answers at once with want
	slow toolCall // runs until cancelled
	// dial reaches the server, as the catalogue's Dial; it may be called
	// more than once. Nil for a server over HTTP, at url.
	dial func(ctx context.Context) (mcp.Transport, error)
	url  string
	// started waits until the slow call is running upstream.
	started func(t *testing.T)
	// told waits until the upstream server has been told the slow call
	// was cancelled, and returns what it saw.
	told func(t *testing.T) string
}

// upstreamKinds are the upstream servers, in the matrix's order.
var upstreamKinds = []string{"go-sdk", "mcp-go", "server-everything", "mcptest", "go-sdk http", "mcp-go http"}

// slowTag names the slow call in a Go peer's events.
const slowTag = "gw"

// newUpstream starts (or prepares to start, on dial) the upstream server
// kind for t.
func newUpstream(t *testing.T, kind string) *upstreamPeer {
	t.Helper()
	switch kind {
	case "go-sdk", "mcp-go":
		role := roleGoSDKServer
		if kind == "mcp-go" {
			role = roleMCPGoServer
		}
		events := filepath.Join(t.TempDir(), "events")
		exe, env := selfCommand(t, role, eventsFileEnv+"="+events)
		wire := &stdinLog{}
		up := &upstreamPeer{
			name: kind,
			echo: toolCall{tool: "echo", args: map[string]any{"text": "hi"}, want: "hi"},
			slow: toolCall{tool: "slow", args: map[string]any{"tag": slowTag, "ms": 600000}},
			dial: procDialer(t, wire, exe, env),
		}
		up.started = func(t *testing.T) { waitEvent(t, events, evStarted, slowTag) }
		up.told = func(t *testing.T) string {
			wire.waitCancelled(t, wire.waitCall(t, "slow"))
			waitEvent(t, events, evCancelled, slowTag)
			return "notifications/cancelled, handler ctx done, on " + wire.revision()
		}
		return up
	case "server-everything":
		modules := nodepeer.Install(t, nodepeer.ServerEverything, nodepeer.SDK, nodepeer.OIDCProvider)
		entry := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
		wire := &stdinLog{}
		up := &upstreamPeer{
			name: kind,
			echo: toolCall{tool: "echo", args: map[string]any{"message": "hi"}, want: "Echo: hi"},
			slow: toolCall{tool: "trigger-long-running-operation", args: map[string]any{"duration": 600, "steps": 600}},
			dial: procDialer(t, wire, nodepeer.Node(t), os.Environ(), entry, "stdio"),
		}
		up.started = func(t *testing.T) { wire.waitCall(t, up.slow.tool) }
		// Its long-running operation ignores its AbortSignal (it runs on,
		// and only its answer is dropped), so what it saw is the wire.
		up.told = func(t *testing.T) string {
			wire.waitCancelled(t, wire.waitCall(t, up.slow.tool))
			return "notifications/cancelled, on " + wire.revision()
		}
		return up
	case "go-sdk http", "mcp-go http":
		peer := peerGoSDKStateless
		if kind == "mcp-go http" {
			peer = peerMCPGoStreamable
		}
		var closed atomic.Bool // the slow call's response stream closed before its answer
		p := startPeerWith(t, peer, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var m stdinMsg
				_ = json.Unmarshal(body, &m)
				h.ServeHTTP(w, r)
				if m.Method == "tools/call" && m.Params.Name == "slow" && r.Context().Err() != nil {
					closed.Store(true)
				}
			})
		})
		return &upstreamPeer{
			name:    kind,
			echo:    toolCall{tool: "echo", args: map[string]any{"text": "hi"}, want: "hi"},
			slow:    toolCall{tool: "slow", args: map[string]any{"tag": slowTag, "ms": 600000}},
			url:     p.url,
			started: func(t *testing.T) { p.events.wait(t, evStarted, slowTag) },
			told: func(t *testing.T) string {
				p.events.wait(t, evCancelled, slowTag)
				// The handler ends before its POST is seen to have
				// closed: wait for how the server was told.
				var how []string
				for deadline := time.Now().Add(nodeBudget); len(how) == 0; time.Sleep(5 * time.Millisecond) {
					if closed.Load() {
						how = append(how, "the call's stream closed")
					}
					if len(p.wire.posts("notifications/cancelled")) > 0 {
						how = append(how, "notifications/cancelled")
					}
					if len(how) == 0 && time.Now().After(deadline) {
						t.Fatalf("the handler's ctx ended, but the server was told nothing; it received:\n%s", p.wire)
					}
				}
				version := ""
				if calls := p.wire.posts("tools/call"); len(calls) > 0 {
					version = calls[0].version
				}
				return strings.Join(how, " + ") + ", handler ctx done, on " + version
			},
		}
	case "mcptest":
		srv := mcptest.NewServer(nil)
		t.Cleanup(srv.Close)
		wait := func(t *testing.T, what string, match func(mcptest.Record) bool) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), nodeBudget)
			defer cancel()
			if _, err := srv.WaitFor(ctx, match); err != nil {
				t.Fatalf("upstream mcptest: %s: %v", what, err)
			}
		}
		return &upstreamPeer{
			name: kind,
			echo: toolCall{tool: "echo", args: map[string]any{"text": "hi"}, want: "hi"},
			slow: toolCall{tool: "slow", args: map[string]any{"ms": 600000}},
			dial: func(context.Context) (mcp.Transport, error) { return srv.Transport(), nil },
			started: func(t *testing.T) {
				wait(t, "the slow call started", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			},
			told: func(t *testing.T) string {
				wait(t, "notifications/cancelled", func(r mcptest.Record) bool {
					return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
				})
				wait(t, "the slow call cancelled", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
				return "notifications/cancelled; handler ctx done"
			},
		}
	}
	t.Fatalf("unknown upstream %q", kind)
	return nil
}

// procDialer returns a dial that starts the command exe args with env,
// MCP on its stdin and stdout, recording what reaches its stdin in wire.
// Every process it started is ended with t.
func procDialer(t *testing.T, wire *stdinLog, exe string, env []string, args ...string) func(context.Context) (mcp.Transport, error) {
	var mu sync.Mutex
	var procs []*procConn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			p.Close()
		}
	})
	stderr := &logLines{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("upstream %s stderr:\n%s", filepath.Base(exe), stderr.String())
		}
	})
	return func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(exe, args...)
		cmd.Env = env
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p := &procConn{cmd: cmd, stdin: stdin, stdout: stdout, wire: wire}
		mu.Lock()
		procs = append(procs, p)
		mu.Unlock()
		return mcp.Stream(p), nil
	}
}

// procConn is a server subprocess as a byte stream: what is written goes
// to its stdin (and its wire log), what is read comes from its stdout.
type procConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	wire   *stdinLog
	once   sync.Once
}

func (p *procConn) Read(b []byte) (int, error) { return p.stdout.Read(b) }

func (p *procConn) Write(b []byte) (int, error) {
	n, err := p.stdin.Write(b)
	p.wire.Write(b[:n])
	return n, err
}

// Close closes its stdin, which ends a stdio server, and waits for it to
// exit; one that has not within a while is killed.
func (p *procConn) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		exited := make(chan struct{})
		go func() {
			p.cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-exited
		}
	})
	return nil
}

// localName is the name under which the gateway offers tool of the
// matrix's one upstream server, "up".
func localName(tool string) string { return catalogue.LocalName("up", tool) }
