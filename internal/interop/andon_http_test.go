package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// The tests in this file run andon's client over HTTP against go-sdk v1.8.0
// and mcp-go v1.2.1 servers (httppeers_test.go), one cell per peer and HTTP
// generation. Every subtest is named PEER/REVISION, so `go test -v -run
// TestAndonHTTP` prints the matrix. docs/benchmarks.md ("HTTP interop
// matrix") lists it with what each peer does on cancel.

// cancelSignal is what makes a peer's tool handler see a cancelled call.
type cancelSignal int

const (
	// The POST going away (andon closes the response stream). andon must
	// send no notification at all: on 2026-07-28 the stream is the signal.
	byStreamClose cancelSignal = iota
	// notifications/cancelled only: the peer ignores the HTTP disconnect
	// (go-sdk with sessions), or there is no per-call stream (HTTP+SSE).
	byNotification
	// Either: mcp-go with sessions cancels on disconnect and on notification.
	byEither
	// Nothing: a peer limitation. The handler runs to its end.
	never
)

// httpCell is one peer × generation.
type httpCell struct {
	peer     string
	pin      string // ProtocolVersion given to andon; "" negotiates
	revision string // the revision andon must end up with
	cancel   cancelSignal
}

func (c httpCell) name() string { return c.peer + "/" + c.revision }

// httpCells is the matrix. Unpinned cells also prove negotiation (see
// TestAndonHTTPNegotiation): andon against go-sdk's stateful handler with
// default settings must settle on 2025-11-25, because its server/discover
// does not list 2026-07-28 (mcp-go's client misses this: bug (b) in
// peer-sdks.md); against an HTTP+SSE server it must find the event stream,
// and then speaks 2025-11-25 over it, as both peers accept.
var httpCells = []httpCell{
	{peer: peerGoSDKStateless, revision: mcp.Version20260728, cancel: byStreamClose},
	{peer: peerGoSDKStatelessNoPropagate, revision: mcp.Version20260728, cancel: never},
	{peer: peerGoSDKStateful, revision: mcp.Version20251125, cancel: byNotification},
	{peer: peerGoSDKSSE, pin: mcp.Version20241105, revision: mcp.Version20241105, cancel: byNotification},
	{peer: peerGoSDKSSE, revision: mcp.Version20251125, cancel: byNotification},
	{peer: peerMCPGoStreamable, revision: mcp.Version20260728, cancel: byStreamClose},
	{peer: peerMCPGoStreamable, pin: mcp.Version20251125, revision: mcp.Version20251125, cancel: byEither},
	{peer: peerMCPGoSSE, pin: mcp.Version20241105, revision: mcp.Version20241105, cancel: byNotification},
	{peer: peerMCPGoSSE, revision: mcp.Version20251125, cancel: byNotification},
}

// isSSEPeer reports whether peer speaks HTTP+SSE only.
func isSSEPeer(peer string) bool { return peer == peerGoSDKSSE || peer == peerMCPGoSSE }

// forEachCell runs f as a parallel subtest per cell, with a fresh peer and a
// client connected to it.
func forEachCell(t *testing.T, f func(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client)) {
	t.Parallel()
	for _, cell := range httpCells {
		t.Run(cell.name(), func(t *testing.T) {
			t.Parallel()
			p := startPeer(t, cell.peer)
			c := connectHTTP(t, p, cell.pin)
			if got := c.ProtocolVersion(); got != cell.revision {
				t.Fatalf("negotiated %q, want %q (pinned %q)", got, cell.revision, cell.pin)
			}
			f(t, cell, p, c)
		})
	}
}

// TestAndonHTTPNegotiation checks, for every unpinned cell, how andon got to
// its revision, from what reached the peer: server/discover first; on a
// 2026-07-28 peer nothing else; on go-sdk's stateful handler an initialize
// for 2025-11-25 after a discover answer that lists no 2026-07-28; on an
// HTTP+SSE peer, after both POSTs to the stream URL were refused, the GET
// stream and the initialize POSTed to the endpoint it named.
func TestAndonHTTPNegotiation(t *testing.T) {
	t.Parallel()
	for _, cell := range httpCells {
		if cell.pin != "" {
			continue
		}
		t.Run(cell.name(), func(t *testing.T) {
			t.Parallel()
			p := startPeer(t, cell.peer)
			c := connectHTTP(t, p, "")
			if got := c.ProtocolVersion(); got != cell.revision {
				t.Fatalf("negotiated %q, want %q", got, cell.revision)
			}
			callEcho(t, c, "after negotiation")
			discover := p.wire.posts("server/discover")
			if len(discover) != 1 || p.wire.all()[0] != discover[0] {
				t.Fatalf("server/discover was not the first and only probe:%s", p.wire)
			}
			inits := p.wire.posts("initialize")
			if cell.revision == mcp.Version20260728 {
				if discover[0].status.Load() != http.StatusOK || len(inits) != 0 {
					t.Errorf("a 2026-07-28 connection did more than one successful server/discover:%s", p.wire)
				}
				return
			}
			if len(inits) == 0 {
				t.Fatalf("no initialize:%s", p.wire)
			}
			last := inits[len(inits)-1]
			var ip struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if err := json.Unmarshal(last.params, &ip); err != nil || ip.ProtocolVersion != mcp.Version20251125 {
				t.Errorf("initialize asked for %q (%v), want 2025-11-25", ip.ProtocolVersion, err)
			}
			if s := last.waitStatus(); s/100 != 2 {
				t.Errorf("the last initialize got HTTP %d", s)
			}
			if !isSSEPeer(cell.peer) {
				// go-sdk stateful: discover succeeded, listing only
				// handshake-era revisions.
				if discover[0].status.Load() != http.StatusOK || bytes.Contains(discover[0].response(), []byte(`"2026-07-28"`)) {
					t.Errorf("go-sdk's stateful server/discover answer was %d %s; want 200 without 2026-07-28", discover[0].status.Load(), discover[0].response())
				}
				if len(inits) != 1 {
					t.Errorf("%d initialize requests, want 1:%s", len(inits), p.wire)
				}
				return
			}
			if s := discover[0].waitStatus(); s/100 != 4 || inits[0].waitStatus()/100 != 4 {
				t.Errorf("the HTTP+SSE peer did not refuse the Streamable HTTP probes:%s", p.wire)
			}
			gets := 0
			for _, r := range p.wire.all() {
				if r.httpMethod == http.MethodGet {
					gets++
				}
			}
			if gets != 1 || last.session == "" {
				t.Errorf("want one GET stream and an initialize POSTed to its endpoint:%s", p.wire)
			}
		})
	}
}

func TestAndonHTTPListAndEcho(t *testing.T) {
	forEachCell(t, func(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client) {
		tools, err := c.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := []string{"echo", "progress", "slow"}; !slices.Equal(names, want) {
			t.Errorf("tools %v, want %v", names, want)
		}
		callEcho(t, c, "hello over HTTP")
		// What the server was told, as it arrived.
		call := p.wire.posts("tools/call")[0]
		if cell.revision == mcp.Version20260728 {
			if call.version != cell.revision || call.session != "" {
				t.Errorf("tools/call went out with MCP-Protocol-Version %q, session %q; want %s and no session", call.version, call.session, cell.revision)
			}
			if n := len(p.wire.posts("initialize")); n != 0 {
				t.Errorf("%d initialize requests on 2026-07-28", n)
			}
			return
		}
		// The initialize that went through: on an unpinned HTTP+SSE cell
		// the first was refused, as TestAndonHTTPNegotiation shows.
		inits := p.wire.posts("initialize")
		if len(inits) == 0 {
			t.Fatalf("no initialize:%s", p.wire)
		}
		var ip struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(inits[len(inits)-1].params, &ip); err != nil || ip.ProtocolVersion != cell.revision {
			t.Errorf("initialize asked for %q (%v), want %s", ip.ProtocolVersion, err, cell.revision)
		}
		if call.session == "" {
			t.Errorf("tools/call carries no session:%s", p.wire)
		}
	})
}

// TestAndonHTTPProgress: every progress notification a peer puts on the wire
// before its result reaches OnProgress, in order, before CallTool returns.
// The count is taken from the wire, since a peer may not write them all
// before the result. Both happen with mcp-go:
//   - its streamable server usually drops the last notification a handler
//     sends just before it returns: its forwarder goroutine has taken it off
//     the session's channel, and finds the request done once it gets the
//     lock (server/streamable_http.go:821-833, the `case <-done` branch);
//   - its SSE server moves notifications to the GET stream's queue on a
//     goroutine of their own (server/sse.go:541-545), so the last progress
//     can follow the result on the stream.
//
// That is logged as a peer limitation, not failed. Progress that follows
// the result may still reach OnProgress if it arrives before CallTool has
// handed over the result (it is the same call's progress, and OnProgress
// never runs after CallTool returns), or be dropped.
func TestAndonHTTPProgress(t *testing.T) {
	forEachCell(t, func(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client) {
		const count = 3
		var got []mcp.Progress
		res, err := c.CallTool(t.Context(), "progress", map[string]any{"count": count, "interval_ms": 5}, &mcp.CallOptions{
			OnProgress: func(p mcp.Progress) { got = append(got, p) },
		})
		if err != nil {
			t.Fatalf("calling progress: %v", err)
		}
		if res.IsError || res.Text() != "progress done" {
			t.Fatalf("progress returned %+v", res)
		}
		before := p.wire.countWritten("notifications/progress", "progress done")
		total := p.wire.countWritten("notifications/progress", "")
		if before < count {
			t.Logf("peer limitation: %s wrote %d of the %d progress notifications its handler sent before its result, %d in all", cell.peer, before, count, total)
		}
		if before == 0 {
			t.Fatalf("the peer sent no progress before its result")
		}
		if len(got) < before || len(got) > total {
			for _, r := range p.wire.all() {
				t.Logf("on the wire: %s %s id=%s -> HTTP %d %q", r.httpMethod, r.rpcMethod, r.id, r.status.Load(), r.response())
			}
			t.Fatalf("OnProgress got %d notifications; the peer wrote %d before its result, %d in all: %+v", len(got), before, total, got)
		}
		for i, p := range got {
			if p.Progress != float64(i+1) || p.Total != count || p.Message == "" {
				t.Errorf("progress %d is %+v, want step %d of %d", i, p, i+1, count)
			}
		}
	})
}

// slowMS is how long the slow tool sleeps for a call the peer is expected
// to cancel (long, so a missed cancellation cannot look like success), and
// for one it cannot (short, so the handler ends before the test does: the
// httptest server's Close waits for it).
func slowMS(cell httpCell) int {
	if cell.cancel == never {
		return 300
	}
	return 60000
}

func TestAndonHTTPCancelMidCall(t *testing.T) {
	forEachCell(t, func(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client) {
		const tag = "cancel-1"
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "slow", map[string]any{"tag": tag, "ms": slowMS(cell)}, nil)
			errc <- err
		}()
		p.events.wait(t, evStarted, tag)
		call := p.wire.posts("tools/call")[0]
		cancel()
		err := <-errc // CallTool never outlives the request timeout
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool after cancel returned %v, want ErrCancelled and context.Canceled", err)
		}
		if errors.Is(err, mcp.ErrTimeout) {
			t.Errorf("a cancelled call also matches ErrTimeout: %v", err)
		}
		assertPeerSawCancel(t, cell, p, tag, call)
		callEcho(t, c, "still here after a cancel")
		assertCancelSignal(t, cell, p, c, call)
	})
}

// timeoutHTTP is the per-call Timeout of the HTTP timeout tests: long
// enough for the request to reach the handler first on a busy machine.
const timeoutHTTP = 250 * time.Millisecond

func TestAndonHTTPTimeout(t *testing.T) {
	forEachCell(t, func(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client) {
		const tag = "timeout-1"
		_, err := c.CallTool(t.Context(), "slow", map[string]any{"tag": tag, "ms": slowMS(cell)}, &mcp.CallOptions{Timeout: timeoutHTTP})
		if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CallTool past its Timeout returned %v, want ErrTimeout and context.DeadlineExceeded", err)
		}
		if errors.Is(err, mcp.ErrCancelled) {
			t.Errorf("a timed-out call also matches ErrCancelled: %v", err)
		}
		p.events.wait(t, evStarted, tag)
		call := p.wire.posts("tools/call")[0]
		assertPeerSawCancel(t, cell, p, tag, call)
		callEcho(t, c, "still here after a timeout")
		assertCancelSignal(t, cell, p, c, call)
	})
}

// assertPeerSawCancel checks what the peer's handler for the call tagged tag
// did after andon gave up on it.
func assertPeerSawCancel(t *testing.T, cell httpCell, p *peerServer, tag string, call *wireRequest) {
	t.Helper()
	switch cell.cancel {
	case byStreamClose, byEither:
		p.events.wait(t, evCancelled, tag)
	case byNotification:
		note := p.wire.waitPost(t, "notifications/cancelled", func(r *wireRequest) bool { return sameRequestID(r, call) })
		ev := p.events.wait(t, evCancelled, tag)
		// Causality, not timing: the handler of a peer that ignores the
		// disconnect can only be cancelled by the notification.
		if ev.at < note.at.UnixNano() {
			t.Errorf("the handler saw the cancellation %v before the notification arrived", time.Duration(note.at.UnixNano()-ev.at))
		}
	case never:
		p.events.wait(t, evFinished, tag)
		t.Logf("peer limitation: %s never cancels the handler; it ran its full %d ms", cell.peer, slowMS(cell))
	}
	if cell.cancel != never {
		if _, ok := p.events.find(evFinished, tag); ok {
			t.Errorf("the handler finished although it was cancelled")
		}
	}
}

// assertCancelSignal closes c, so that any notification andon had on its
// way has gone out, and checks what reached the peer: on 2026-07-28 no
// notification at all; on a handshake-era revision exactly one, naming the
// call, in the call's session.
func assertCancelSignal(t *testing.T, cell httpCell, p *peerServer, c *mcp.Client, call *wireRequest) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing the client: %v", err)
	}
	notes := p.wire.posts("notifications/cancelled")
	if cell.revision == mcp.Version20260728 {
		if len(notes) != 0 {
			t.Errorf("andon sent %d notifications/cancelled on 2026-07-28, want none:%s", len(notes), p.wire)
		}
		return
	}
	if len(notes) != 1 {
		t.Fatalf("andon sent %d notifications/cancelled, want 1:%s", len(notes), p.wire)
	}
	note := notes[0]
	if !sameRequestID(note, call) {
		t.Errorf("the notification names %s, the call was id %s", note.params, call.id)
	}
	if note.session == "" || note.session != call.session {
		t.Errorf("the notification went to session %q, the call was in %q", note.session, call.session)
	}
	if s := note.waitStatus(); s/100 != 2 {
		t.Errorf("the peer answered the notification with HTTP %d", s)
	}
}

// sameRequestID reports whether the notification note names the request call.
func sameRequestID(note, call *wireRequest) bool {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	return json.Unmarshal(note.params, &p) == nil && len(p.RequestID) > 0 && bytes.Equal(p.RequestID, call.id)
}

// TestAndonHTTPMCPGoModernSendsNoNotification is bug (a) of peer-sdks.md from
// andon's side. mcp-go answers a 2026-07-28 notification without _meta with
// 400, and go-sdk's client loses its session to that 400. andon sends no
// notification on 2026-07-28, so it has nothing to lose: several cancels
// and timeouts in a row leave the client serving, and nothing but the calls
// reached the server.
func TestAndonHTTPMCPGoModernSendsNoNotification(t *testing.T) {
	t.Parallel()
	t.Run("hazard", func(t *testing.T) {
		t.Parallel()
		// The hazard is real: the notification go-sdk sends is refused.
		p := startPeer(t, peerMCPGoStreamable)
		body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"context canceled"}}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
		resp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("mcp-go answered a 2026-07-28 notification without _meta with %s, want 400 (peer-sdks.md bug (a))", resp.Status)
		}
	})
	t.Run("andon", func(t *testing.T) {
		t.Parallel()
		p := startPeer(t, peerMCPGoStreamable)
		c := connectHTTP(t, p, "")
		if got := c.ProtocolVersion(); got != mcp.Version20260728 {
			t.Fatalf("negotiated %q, want 2026-07-28", got)
		}
		const rounds = 3
		for i := range rounds {
			tag := "cancel-" + string(rune('a'+i))
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "slow", map[string]any{"tag": tag}, nil)
				errc <- err
			}()
			p.events.wait(t, evStarted, tag)
			cancel()
			if err := <-errc; !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("round %d: CallTool after cancel returned %v", i, err)
			}
			p.events.wait(t, evCancelled, tag)
			callEcho(t, c, "after cancel "+tag)

			tag = "timeout-" + string(rune('a'+i))
			if _, err := c.CallTool(t.Context(), "slow", map[string]any{"tag": tag}, &mcp.CallOptions{Timeout: timeoutHTTP}); !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("round %d: CallTool past its Timeout returned %v", i, err)
			}
			p.events.wait(t, evCancelled, tag)
			callEcho(t, c, "after timeout "+tag)
		}
		if err := c.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
		for _, r := range p.wire.all() {
			if r.httpMethod != http.MethodPost || (r.rpcMethod != "server/discover" && r.rpcMethod != "tools/call") {
				t.Errorf("andon sent %s %s (status %d) to a 2026-07-28 server; want only server/discover and tools/call POSTs", r.httpMethod, r.rpcMethod, r.status.Load())
			}
			// 0: an abandoned call, which the peer never answered.
			if s := r.status.Load(); s != http.StatusOK && s != 0 {
				t.Errorf("%s got HTTP %d", r.rpcMethod, s)
			}
		}
	})
}
