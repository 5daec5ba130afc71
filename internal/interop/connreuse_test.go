package interop

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
)

// TestHTTPStreamResponseReusesConnection: sequential calls over Streamable
// HTTP share one keep-alive connection, as they do when the server answers
// with JSON. When it answers with an event stream, the client reads the rest
// of the stream after the response event (bounded), so that net/http can
// reuse the connection. (Found by the interop benchmarks: andon dialled a
// new TCP connection for about every call; go-sdk's client reuses the
// connection, mcp-go's does not.) The peer here ends each stream a moment
// after its last event, as a server in another process, or behind a proxy,
// commonly does.
func TestHTTPStreamResponseReusesConnection(t *testing.T) {
	t.Parallel()
	const calls = 20
	lateEnd := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
				http.NewResponseController(w).Flush()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	for _, peer := range []string{peerGoSDKStateless, peerGoSDKStateful} {
		t.Run(peer, func(t *testing.T) {
			t.Parallel()
			// The peers first, for comparison: the same server, the same calls.
			for _, client := range []string{"gosdk", "mcpgo"} {
				p := startPeerWith(t, peer, lateEnd)
				call := peerClient(t, client, p.url)
				before := p.conns.Load()
				for range calls {
					if err := call("echo", map[string]any{"text": "hi"}); err != nil {
						t.Fatalf("%s calling echo: %v", client, err)
					}
				}
				t.Logf("%s's client against %s: %d new connections for %d calls", client, peer, p.conns.Load()-before, calls)
			}
			p := startPeerWith(t, peer, lateEnd)
			c := connectHTTP(t, p, "")
			before := p.conns.Load()
			for range calls {
				callEcho(t, c, "hi")
			}
			// go-sdk's client drains the stream after returning, so the
			// next call may find its connection still busy: 2-4 here, and
			// 6 once on a loaded machine (the next call dials while the
			// drain finishes). Without the drain it is every call.
			if n := p.conns.Load() - before; n > calls/2 {
				t.Errorf("andon's client dialled %d new connections for %d sequential calls; want most calls to reuse one", n, calls)
			}
		})
	}
}

// peerClient connects the peer client named kind (go-sdk's or mcp-go's,
// unpinned but for mcp-go against a handshake-era server, see bug (b)) to
// the Streamable HTTP endpoint url and returns a function that calls a
// tool. The client is closed with t.
func peerClient(t *testing.T, kind, url string) func(name string, args map[string]any) error {
	t.Helper()
	ctx := t.Context()
	hc := httpClient(t)
	switch kind {
	case "gosdk":
		client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("go-sdk connecting: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return func(name string, args map[string]any) error { return gosdkBench{cs}.call(ctx, name, args) }
	case "mcpgo":
		tr, err := mcpgotransport.NewStreamableHTTP(url, mcpgotransport.WithHTTPBasicClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		c := mcpgoclient.NewClient(tr, mcpgoclient.WithProtocolVersion(mcp.Version20251125))
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpgo.Implementation{Name: "interop-mcpgo-client", Version: "1"}}}); err != nil {
			t.Fatalf("mcp-go connecting: %v", err)
		}
		return func(name string, args map[string]any) error { return mcpgoBench{c}.call(ctx, name, args) }
	}
	t.Fatalf("unknown client %q", kind)
	return nil
}
