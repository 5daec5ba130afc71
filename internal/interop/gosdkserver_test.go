package interop

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The environment of a go-sdk server subprocess. Its slow tool reports what
// its handler does as event lines "KIND TAG UNIXNANO": to the file named by
// eventsFileEnv (appended, for tests to poll) and to the unix socket named by
// eventsSockEnv (for benchmarks, which need the events promptly).
const (
	eventsFileEnv = "ANDON_INTEROP_EVENTS_FILE"
	eventsSockEnv = "ANDON_INTEROP_EVENTS_SOCK"
)

// Event kinds the slow tool reports.
const (
	evStarted   = "STARTED"   // the handler is running
	evCancelled = "CANCELLED" // the handler's ctx was done; the time is when it saw that
	evFinished  = "FINISHED"  // the handler slept its full time
)

// eventSink writes the slow tool's events. Each event is one write of one
// line, so lines from concurrent handlers never interleave. A server in the
// test's own process reports to log instead.
type eventSink struct {
	mu   sync.Mutex
	file *os.File
	sock net.Conn
	log  *eventLog
}

func (s *eventSink) emit(kind, tag string, at time.Time) {
	if s.log != nil {
		s.log.add(kind, tag, at)
	}
	line := []byte(kind + " " + tag + " " + strconv.FormatInt(at.UnixNano(), 10) + "\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		if _, err := s.file.Write(line); err != nil {
			fmt.Fprintln(os.Stderr, "interop server: writing event:", err)
		}
	}
	if s.sock != nil {
		if _, err := s.sock.Write(line); err != nil {
			fmt.Fprintln(os.Stderr, "interop server: sending event:", err)
		}
	}
}

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
	// ProtocolVersion is the revision as the server sees it for this session.
	ProtocolVersion string `json:"protocolVersion"`
}

type slowIn struct {
	Tag string `json:"tag" jsonschema:"names the call in the events the handler reports"`
	MS  int    `json:"ms,omitempty" jsonschema:"how long to sleep, in milliseconds (default 60000)"`
}

type progressIn struct {
	Count      int `json:"count,omitempty" jsonschema:"progress steps to report (default 3)"`
	IntervalMS int `json:"interval_ms,omitempty" jsonschema:"pause before each step, in milliseconds"`
}

// newGoSDKServer returns a go-sdk server with the tools echo, slow and
// progress. The slow tool reports its events to sink.
func newGoSDKServer(sink *eventSink) *gosdk.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "interop-gosdk", Version: "1"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "echo", Description: "Returns its text."},
		func(ctx context.Context, req *gosdk.CallToolRequest, in echoIn) (*gosdk.CallToolResult, echoOut, error) {
			out := echoOut{Text: in.Text}
			if p := req.Session.InitializeParams(); p != nil {
				out.ProtocolVersion = p.ProtocolVersion
			}
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, out, nil
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "slow", Description: "Sleeps, honouring cancellation, and reports what it did."},
		func(ctx context.Context, req *gosdk.CallToolRequest, in slowIn) (*gosdk.CallToolResult, any, error) {
			ms := in.MS
			if ms <= 0 {
				ms = 60000
			}
			sink.emit(evStarted, in.Tag, time.Now())
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-ctx.Done():
				sink.emit(evCancelled, in.Tag, time.Now())
				return nil, nil, ctx.Err()
			case <-t.C:
				sink.emit(evFinished, in.Tag, time.Now())
				return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "slept " + strconv.Itoa(ms) + "ms"}}}, nil, nil
			}
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "progress", Description: "Reports count progress steps, then answers."},
		func(ctx context.Context, req *gosdk.CallToolRequest, in progressIn) (*gosdk.CallToolResult, any, error) {
			count := in.Count
			if count <= 0 {
				count = 3
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= count; i++ {
				if in.IntervalMS > 0 {
					select {
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					case <-time.After(time.Duration(in.IntervalMS) * time.Millisecond):
					}
				}
				if token == nil {
					continue
				}
				err := req.Session.NotifyProgress(ctx, &gosdk.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      float64(i),
					Total:         float64(count),
					Message:       fmt.Sprintf("step %d of %d", i, count),
				})
				if err != nil {
					return nil, nil, err
				}
			}
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "progress done"}}}, nil, nil
		})
	return s
}

// runGoSDKServer serves the go-sdk server over stdin and stdout until stdin
// ends, and returns the exit status.
func runGoSDKServer(ctx context.Context) int {
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
	if path := os.Getenv(eventsSockEnv); path != "" {
		conn, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "interop server:", err)
			return 2
		}
		defer conn.Close()
		sink.sock = conn
	}
	err := newGoSDKServer(sink).Run(ctx, &gosdk.StdioTransport{})
	if err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "interop server:", err)
		return 1
	}
	return 0
}

// httpModeEnv selects what a go-sdk HTTP server subprocess serves: one of
// the httpMode constants.
const httpModeEnv = "ANDON_INTEROP_HTTP_MODE"

// The go-sdk HTTP handlers the HTTP benchmarks run against, one per HTTP
// generation.
const (
	// StreamableHTTPHandler, Stateless and PropagateRequestCancellation:
	// 2026-07-28, a handler is cancelled when its POST goes away.
	httpModeStateless = "stateless"
	// StreamableHTTPHandler with default options: sessions, 2025-11-25 and
	// older.
	httpModeStateful = "stateful"
	// SSEHandler: HTTP+SSE.
	httpModeSSE = "sse"
)

// runGoSDKHTTPServer serves the go-sdk server over HTTP on 127.0.0.1, with
// the handler httpModeEnv names, prints its URL on stdout, and serves until
// stdin ends. The slow tool reports to the unix socket eventsSockEnv names.
func runGoSDKHTTPServer() int {
	sink := &eventSink{}
	if path := os.Getenv(eventsSockEnv); path != "" {
		conn, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "interop server:", err)
			return 2
		}
		defer conn.Close()
		sink.sock = conn
	}
	s := newGoSDKServer(sink)
	getServer := func(*http.Request) *gosdk.Server { return s }
	var h http.Handler
	switch mode := os.Getenv(httpModeEnv); mode {
	case httpModeStateless:
		h = gosdk.NewStreamableHTTPHandler(getServer, &gosdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	case httpModeStateful:
		h = gosdk.NewStreamableHTTPHandler(getServer, nil)
	case httpModeSSE:
		h = gosdk.NewSSEHandler(getServer, nil)
	default:
		fmt.Fprintf(os.Stderr, "interop server: unknown %s %q\n", httpModeEnv, mode)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop server:", err)
		return 2
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	fmt.Printf("http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	// Handlers a client never cancelled may still be running; they get a
	// moment, then the process ends anyway.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	return 0
}
