package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// toolBox is a ToolServer for the server's tests: echo answers at once;
// wait blocks until its context ends and reports why.
type toolBox struct {
	started chan *mcp.ToolCall // each wait call, once it is waiting
	ended   chan error         // the cause of each wait call's context

	mu    sync.Mutex
	peers []*mcp.Peer
}

func newToolBox() *toolBox {
	return &toolBox{started: make(chan *mcp.ToolCall, 8), ended: make(chan error, 8)}
}

func (b *toolBox) ListTools(ctx context.Context, peer *mcp.Peer) ([]mcp.Tool, error) {
	return []mcp.Tool{
		{Name: "echo", Description: "says it back", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "third", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}, nil
}

func (b *toolBox) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	b.peers = append(b.peers, call.Peer)
	b.mu.Unlock()
	switch call.Name {
	case "echo":
		return &mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: "echo: " + string(call.Arguments)}}}, nil
	case "wait":
		b.started <- call
		<-ctx.Done()
		b.ended <- context.Cause(ctx)
		return &mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: "stopped"}}, IsError: true}, nil
	}
	return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "unknown tool " + call.Name}
}

// serverCase is a transport and revision a client reaches a Server by.
type serverCase struct {
	name    string
	version string
	http    bool
}

func serverCases() []serverCase {
	var cs []serverCase
	for _, v := range mcp.SupportedVersions() {
		cs = append(cs, serverCase{"stdio/" + v, v, false})
		if v != mcp.Version20241105 { // spoken over HTTP+SSE, which Server does not serve
			cs = append(cs, serverCase{"http/" + v, v, true})
		}
	}
	return cs
}

// connect starts srv on the case's transport and connects a client to it.
func (sc serverCase) connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	var tr mcp.Transport
	if sc.http {
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		tr = mcp.HTTP(hs.URL, hs.Client())
	} else {
		client, server := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.ServeStream(context.Background(), server, server) }()
		t.Cleanup(func() {
			server.Close()
			if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, mcp.ErrServerClosed) {
				t.Errorf("ServeStream: %v", err)
			}
		})
		tr = mcp.Stream(client)
	}
	o := mcp.ClientOptions{ProtocolVersion: sc.version}
	if opts != nil {
		o = *opts
		o.ProtocolVersion = sc.version
	}
	c, err := mcp.Connect(context.Background(), tr, &o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServerListsAndCallsOnEveryRevision(t *testing.T) {
	for _, sc := range serverCases() {
		t.Run(sc.name, func(t *testing.T) {
			box := newToolBox()
			srv := mcp.NewServer(box, &mcp.ServerOptions{Implementation: mcp.Implementation{Name: "test-server", Version: "1"}, PageSize: 2})
			defer srv.Close()
			c := sc.connect(t, srv, &mcp.ClientOptions{ClientInfo: mcp.Implementation{Name: "test-client", Version: "7"}})
			if got := c.ProtocolVersion(); got != sc.version {
				t.Fatalf("negotiated %s, want %s", got, sc.version)
			}
			if got := c.Server().Implementation.Name; got != "test-server" {
				t.Errorf("server name %q", got)
			}
			tools, err := c.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			if strings.Join(names, ",") != "echo,wait,third" { // two pages
				t.Errorf("tools %v", names)
			}
			res, err := c.CallTool(context.Background(), "echo", map[string]any{"x": 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != `echo: {"x":1}` {
				t.Errorf("result %q", got)
			}
			_, err = c.CallTool(context.Background(), "nope", nil, nil)
			if !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
				t.Errorf("unknown tool: %v, want invalid params", err)
			}
			box.mu.Lock()
			peer := box.peers[0]
			box.mu.Unlock()
			if peer.ProtocolVersion != sc.version || peer.Client.Name != "test-client" || peer.Session == "" {
				t.Errorf("peer %+v", peer)
			}
		})
	}
}

// TestServerEndsACancelledCall: a client's cancel, however its revision
// sends it, ends the handler's context.
func TestServerEndsACancelledCall(t *testing.T) {
	for _, sc := range serverCases() {
		t.Run(sc.name, func(t *testing.T) {
			box := newToolBox()
			srv := mcp.NewServer(box, nil)
			defer srv.Close()
			c := sc.connect(t, srv, nil)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "wait", nil, nil)
				errc <- err
			}()
			<-box.started
			cancel()
			if err := <-errc; !errors.Is(err, mcp.ErrCancelled) {
				t.Errorf("call: %v, want ErrCancelled", err)
			}
			cause := waitCause(t, box)
			// On stdio and in a session the cancel is notifications/cancelled;
			// a 2026-07-28 request over HTTP is cancelled by its closed stream.
			want := mcp.ErrClientCancelled
			if sc.http && sc.version == mcp.Version20260728 {
				want = mcp.ErrClientGone
			}
			if sc.http && want == mcp.ErrClientCancelled && errors.Is(cause, mcp.ErrClientGone) {
				want = mcp.ErrClientGone // the stream closed before the notification came
			}
			if !errors.Is(cause, want) {
				t.Errorf("handler's context ended with %v, want %v", cause, want)
			}
		})
	}
}

// TestServerEndsCallsOfAClientThatGoes: a client that closes its connection
// (stdio) or its session (HTTP) cancels what it has in flight.
func TestServerEndsCallsOfAClientThatGoes(t *testing.T) {
	for _, sc := range serverCases() {
		if sc.http && sc.version == mcp.Version20260728 {
			continue // no session: a closed stream is the cancel, above
		}
		t.Run(sc.name, func(t *testing.T) {
			box := newToolBox()
			srv := mcp.NewServer(box, nil)
			defer srv.Close()
			c := sc.connect(t, srv, nil)
			go c.CallTool(context.Background(), "wait", nil, nil)
			<-box.started
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			c.Shutdown(ctx) // a DELETE over HTTP; the pipe closed on stdio
			if cause := waitCause(t, box); !errors.Is(cause, mcp.ErrClientGone) && !errors.Is(cause, mcp.ErrClientCancelled) {
				t.Errorf("handler's context ended with %v, want ErrClientGone", cause)
			}
		})
	}
}

func TestServerCloseEndsCallsInFlight(t *testing.T) {
	box := newToolBox()
	srv := mcp.NewServer(box, nil)
	c := serverCase{"http", mcp.Version20251125, true}.connect(t, srv, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "wait", nil, nil)
		errc <- err
	}()
	<-box.started
	srv.Close()
	if cause := waitCause(t, box); !errors.Is(cause, mcp.ErrServerClosed) {
		t.Errorf("cause %v, want ErrServerClosed", cause)
	}
	<-errc
}

func waitCause(t *testing.T, box *toolBox) error {
	t.Helper()
	select {
	case cause := <-box.ended:
		return cause
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context never ended")
		return nil
	}
}

func TestServerTellsClientsTheToolsChanged(t *testing.T) {
	for _, sc := range serverCases() {
		t.Run(sc.name, func(t *testing.T) {
			srv := mcp.NewServer(newToolBox(), nil)
			defer srv.Close()
			changed := make(chan string, 4)
			c := sc.connect(t, srv, &mcp.ClientOptions{OnListChanged: func(list string) { changed <- list }})
			if sc.version == mcp.Version20260728 {
				acked := make(chan mcp.SubscriptionFilter, 1)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(f mcp.SubscriptionFilter) { acked <- f })
				}()
				defer func() { cancel(); <-done }()
				if f := <-acked; !f.ToolsListChanged {
					t.Fatalf("acknowledged %+v", f)
				}
			} else if sc.http {
				waitForStream(t, srv, c)
			}
			srv.NotifyToolsChanged()
			select {
			case got := <-changed:
				if got != "tools" {
					t.Errorf("OnListChanged(%q)", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no list change reached the client")
			}
		})
	}
}

// waitForStream waits until the client's standalone stream is open: until
// then a list change has nowhere to go.
func waitForStream(t *testing.T, srv *mcp.Server, c *mcp.Client) {
	t.Helper()
	for range 200 {
		if mcp.ServerHasStream(srv) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the client never opened its standalone stream")
}

func TestServerRefusesBadHTTPRequests(t *testing.T) {
	srv := mcp.NewServer(newToolBox(), &mcp.ServerOptions{MaxMessageSize: 1 << 10})
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	post := func(body string, header map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tc := range []struct {
		name, body string
		header     map[string]string
		status     int
		contains   string
	}{
		{"not JSON", `{oops`, nil, 400, `-32700`},
		{"no session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, 400, "Mcp-Session-Id"},
		{"unknown session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "nope"}, 404, "unknown"},
		{"over the limit", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", 2000) + `"}}`, nil, 413, "over 1024 bytes"},
		{"headers disagree", modern, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, 400, "Mcp-Name"},
		{"headers agree", modern, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, 200, `"resultType":"complete"`},
		{"other origin", modern, map[string]string{"Origin": "https://evil.example"}, 403, "cross-origin"},
		{"unknown revision", strings.Replace(modern, "2026-07-28", "2099-01-01", 1), map[string]string{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, 400, "-32022"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(tc.body, tc.header)
			if status != tc.status || !strings.Contains(body, tc.contains) {
				t.Errorf("got %d %s, want %d containing %q", status, body, tc.status, tc.contains)
			}
		})
	}
}

// TestServerNotifiesWhileAStreamStarts: a list change told to every
// session while a stdio session starts (the gateway's catalogue reports
// its first listing while a client connects) reaches the new session
// whole or not at all, and (under -race) touches nothing ServeStream is
// still setting up.
func TestServerNotifiesWhileAStreamStarts(t *testing.T) {
	srv := mcp.NewServer(newToolBox(), nil)
	defer srv.Close()
	for range 20 {
		client, server := net.Pipe()
		read := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(client)
			read <- b
		}()
		done := make(chan error, 1)
		go func() { done <- srv.ServeStream(context.Background(), server, server) }()
		for range 3 {
			srv.NotifyToolsChanged()
		}
		server.Close()
		<-done
		client.Close()
		for line := range strings.Lines(string(<-read)) {
			if line != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n" {
				t.Errorf("the client read %q", line)
			}
		}
	}
}

// TestServerTellsWhenSessionsEnd: every session's end is told once, by the
// id its requests' Peer carried: a stdio connection's, an HTTP session's
// DELETE, and the sessions Close ends.
func TestServerTellsWhenSessionsEnd(t *testing.T) {
	ended := make(chan string, 8)
	box := newToolBox()
	srv := mcp.NewServer(box, &mcp.ServerOptions{OnSessionEnd: func(s string) { ended <- s }})
	peerOf := func(c *mcp.Client) string {
		t.Helper()
		if _, err := c.CallTool(t.Context(), "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		box.mu.Lock()
		defer box.mu.Unlock()
		return box.peers[len(box.peers)-1].Session
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-ended:
			if got != want {
				t.Errorf("ended %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("session %q's end was not told", want)
		}
	}
	for _, sc := range []serverCase{{"stdio", mcp.Version20251125, false}, {"http", mcp.Version20251125, true}} {
		c := sc.connect(t, srv, nil)
		id := peerOf(c)
		c.Close() // the pipe closes; over HTTP, a DELETE
		expect(id)
	}
	c := serverCase{"http", mcp.Version20250618, true}.connect(t, srv, nil)
	id := peerOf(c)
	srv.Close()
	expect(id)
	select {
	case again := <-ended:
		t.Errorf("told again: %q", again)
	case <-time.After(50 * time.Millisecond):
	}
}
