package interop

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
)

// The servers of the surface tests (resources, prompts, completion,
// logging): the same surface built on each peer library.
//
//   - surface://hello: text "hello from PEER"; surface://bytes: the blob
//     0, 1, 2, 255; surface://log: sends a warning log message (logger
//     "surface", data "a warning"), then answers "logged".
//   - surface://slow/{tag}: waits a minute, honouring cancellation, and
//     reports STARTED and CANCELLED or FINISHED for tag.
//   - prompt greet {name (required)}: one user message "Hello, NAME!".
//   - completion of greet's argument style: the candidates that start with
//     the typed value, of "a pirate", "a poet", "a robot".
//   - go-sdk: a tool noop, so that it declares tools and their list
//     changes; mcp-go declares them by option.
const surfaceSlowPrefix = "surface://slow/"

var styleCandidates = []string{"a pirate", "a poet", "a robot"}

func completeStyle(value string) []string {
	return slices.DeleteFunc(slices.Clone(styleCandidates), func(v string) bool { return !strings.HasPrefix(v, value) })
}

// waitSlow is the slow resource's handler body on both peers.
func waitSlow(ctx context.Context, sink *eventSink, uri string) error {
	tag := strings.TrimPrefix(uri, surfaceSlowPrefix)
	sink.emit(evStarted, tag, time.Now())
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case <-ctx.Done():
		sink.emit(evCancelled, tag, time.Now())
		return ctx.Err()
	case <-t.C:
		sink.emit(evFinished, tag, time.Now())
		return nil
	}
}

func newGoSDKSurfaceServer(sink *eventSink) *gosdk.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "surface-gosdk", Version: "1"}, &gosdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *gosdk.CompleteRequest) (*gosdk.CompleteResult, error) {
			if req.Params.Ref == nil || req.Params.Ref.Name != "greet" || req.Params.Argument.Name != "style" {
				return &gosdk.CompleteResult{Completion: gosdk.CompletionResultDetails{Values: []string{}}}, nil
			}
			values := completeStyle(req.Params.Argument.Value)
			return &gosdk.CompleteResult{Completion: gosdk.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		},
		SubscribeHandler:   func(context.Context, *gosdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *gosdk.UnsubscribeRequest) error { return nil },
	})
	// A tool, so that the server declares tools (listChanged) and agrees
	// to a listen stream asking for tool list changes.
	gosdk.AddTool(s, &gosdk.Tool{Name: "noop"}, func(context.Context, *gosdk.CallToolRequest, struct{}) (*gosdk.CallToolResult, any, error) {
		return &gosdk.CallToolResult{}, nil, nil
	})
	text := func(uri, s string) *gosdk.ReadResourceResult {
		return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: s}}}
	}
	s.AddResource(&gosdk.Resource{URI: "surface://hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			return text(req.Params.URI, "hello from go-sdk"), nil
		})
	s.AddResource(&gosdk.Resource{URI: "surface://bytes", Name: "bytes", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}}}, nil
		})
	s.AddResource(&gosdk.Resource{URI: "surface://log", Name: "log", MIMEType: "text/plain"},
		func(ctx context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			//lint:ignore SA1019 logging is deprecated (SEP-2577) but still in every revision andon speaks, and this server tests it
			if err := req.Session.Log(ctx, &gosdk.LoggingMessageParams{Level: "warning", Logger: "surface", Data: "a warning"}); err != nil {
				return nil, err
			}
			return text(req.Params.URI, "logged"), nil
		})
	s.AddResourceTemplate(&gosdk.ResourceTemplate{URITemplate: surfaceSlowPrefix + "{tag}", Name: "slow", MIMEType: "text/plain"},
		func(ctx context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			if err := waitSlow(ctx, sink, req.Params.URI); err != nil {
				return nil, err
			}
			return text(req.Params.URI, "slept"), nil
		})
	s.AddPrompt(&gosdk.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*gosdk.PromptArgument{{Name: "name", Required: true}, {Name: "style"}}},
		func(_ context.Context, req *gosdk.GetPromptRequest) (*gosdk.GetPromptResult, error) {
			return &gosdk.GetPromptResult{Messages: []*gosdk.PromptMessage{{Role: "user", Content: &gosdk.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}}}}, nil
		})
	return s
}

type styleCompleter struct{}

func (styleCompleter) CompletePromptArgument(_ context.Context, prompt string, arg mcpgo.CompleteArgument, _ mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	if prompt != "greet" || arg.Name != "style" {
		return &mcpgo.Completion{Values: []string{}}, nil
	}
	values := completeStyle(arg.Value)
	return &mcpgo.Completion{Values: values, Total: len(values)}, nil
}

func newMCPGoSurfaceServer(sink *eventSink) *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("surface-mcpgo", "1",
		mcpgoserver.WithToolCapabilities(true),
		mcpgoserver.WithResourceCapabilities(false, false),
		mcpgoserver.WithPromptCapabilities(false),
		mcpgoserver.WithLogging(),
		mcpgoserver.WithCompletions(),
		mcpgoserver.WithPromptCompletionProvider(styleCompleter{}))
	text := func(uri, s string) []mcpgo.ResourceContents {
		return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: s}}
	}
	s.AddResource(mcpgo.NewResource("surface://hello", "hello", mcpgo.WithMIMEType("text/plain")),
		func(_ context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return text(req.Params.URI, "hello from mcp-go"), nil
		})
	s.AddResource(mcpgo.NewResource("surface://bytes", "bytes", mcpgo.WithMIMEType("application/octet-stream")),
		func(_ context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.BlobResourceContents{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: "AAEC/w=="}}, nil
		})
	s.AddResource(mcpgo.NewResource("surface://log", "log", mcpgo.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			err := mcpgoserver.ServerFromContext(ctx).SendLogMessageToClient(ctx, mcpgo.NewLoggingMessageNotification("warning", "surface", "a warning"))
			if err != nil {
				return nil, err
			}
			return text(req.Params.URI, "logged"), nil
		})
	s.AddResourceTemplate(mcpgo.NewResourceTemplate(surfaceSlowPrefix+"{tag}", "slow", mcpgo.WithTemplateMIMEType("text/plain")),
		func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			if err := waitSlow(ctx, sink, req.Params.URI); err != nil {
				return nil, err
			}
			return text(req.Params.URI, "slept"), nil
		})
	s.AddPrompt(mcpgo.NewPrompt("greet", mcpgo.WithPromptDescription("Greets someone."),
		mcpgo.WithArgument("name", mcpgo.RequiredArgument()), mcpgo.WithArgument("style")),
		func(_ context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
			return mcpgo.NewGetPromptResult("", []mcpgo.PromptMessage{
				mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent("Hello, "+req.Params.Arguments["name"]+"!")),
			}), nil
		})
	return s
}

// surfacePeer is one way to reach a surface server: a peer library, a
// transport, a revision.
type surfacePeer struct {
	name     string
	library  string // "go-sdk" or "mcp-go"
	http     string // a peer kind of httppeers_test.go; empty: stdio framing over a pipe
	revision string
}

var surfacePeers = []surfacePeer{
	{"gosdk/pipe/2026-07-28", "go-sdk", "", mcp.Version20260728},
	{"gosdk/pipe/2025-11-25", "go-sdk", "", mcp.Version20251125},
	{"gosdk/http-stateless/2026-07-28", "go-sdk", peerGoSDKStateless, mcp.Version20260728},
	{"gosdk/http-stateful/2025-11-25", "go-sdk", peerGoSDKStateful, mcp.Version20251125},
	{"mcpgo/pipe/2026-07-28", "mcp-go", "", mcp.Version20260728},
	{"mcpgo/pipe/2025-11-25", "mcp-go", "", mcp.Version20251125},
	{"mcpgo/http-streamable/2026-07-28", "mcp-go", peerMCPGoStreamable, mcp.Version20260728},
	{"mcpgo/http-streamable/2025-11-25", "mcp-go", peerMCPGoStreamable, mcp.Version20251125},
}

// surfaceBundle is a connected client and what the test can see of its
// server.
type surfaceBundle struct {
	client *mcp.Client
	events *eventLog
	wire   *wireLog // nil over a pipe
	logs   *logBuffer
	// addTool adds a tool to the server, which then announces that its
	// tool list changed.
	addTool func(name string)
}

// connectSurface starts p's server (in this process) and connects andon's
// client to it, with opts (ProtocolVersion and Logger are set here).
func connectSurface(t *testing.T, p surfacePeer, opts mcp.ClientOptions) *surfaceBundle {
	t.Helper()
	b := &surfaceBundle{events: &eventLog{}, logs: &logBuffer{}}
	sink := &eventSink{log: b.events}
	// The server, built once whatever the transport, and how to change it.
	var gs *gosdk.Server
	var ms *mcpgoserver.MCPServer
	if p.library == "go-sdk" {
		gs = newGoSDKSurfaceServer(sink)
		b.addTool = func(name string) {
			gosdk.AddTool(gs, &gosdk.Tool{Name: name}, func(context.Context, *gosdk.CallToolRequest, struct{}) (*gosdk.CallToolResult, any, error) {
				return &gosdk.CallToolResult{}, nil, nil
			})
		}
	} else {
		ms = newMCPGoSurfaceServer(sink)
		b.addTool = func(name string) {
			ms.AddTool(mcpgo.NewTool(name), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(""), nil
			})
		}
	}
	var transport mcp.Transport
	if p.http == "" {
		serverEnd, clientEnd := net.Pipe()
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		switch p.library {
		case "go-sdk":
			ss, err := gs.Connect(ctx, &gosdk.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			go func() { defer close(done); ss.Wait() }()
		default:
			go func() {
				defer close(done)
				mcpgoserver.NewStdioServer(ms).Listen(ctx, serverEnd, serverEnd)
			}()
		}
		t.Cleanup(func() {
			stop()
			serverEnd.Close()
			<-done
		})
		transport = mcp.Stream(clientEnd)
	} else {
		b.wire = &wireLog{}
		var h http.Handler
		path := ""
		switch p.http {
		case peerGoSDKStateless:
			h = gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return gs }, &gosdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
		case peerGoSDKStateful:
			h = gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return gs }, nil)
		case peerMCPGoStreamable:
			h = mcpgoserver.NewStreamableHTTPServer(ms, mcpgoserver.WithStateful(true))
			path = "/mcp"
		default:
			t.Fatalf("no surface server for peer %q", p.http)
		}
		srv := httptest.NewServer(b.wire.wrap(h))
		t.Cleanup(srv.Close)
		transport = mcp.HTTP(srv.URL+path, httpClient(t))
	}
	opts.ProtocolVersion = p.revision
	opts.Logger = newTestLogger(b.logs)
	ctx, cancel := context.WithTimeout(context.Background(), pollDeadline)
	defer cancel()
	c, err := mcp.Connect(ctx, transport, &opts)
	if err != nil {
		t.Fatalf("connecting to %s: %v", p.name, err)
	}
	t.Cleanup(func() { c.Close() })
	b.client = c
	return b
}

// logBuffer collects a client's log lines, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newTestLogger(w *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// waitFor polls cond until it holds, failing t with what and dump() after
// pollDeadline. It only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v:\n%s", what, pollDeadline, dump())
		}
		time.Sleep(time.Millisecond)
	}
}

// cancelWhenReported cancels once the server has reported kind for tag (or
// after pollDeadline, so that a broken test ends). It runs on a goroutine
// of its own, so it never fails the test itself.
func cancelWhenReported(events *eventLog, kind, tag string, cancel context.CancelFunc) {
	go func() {
		defer cancel()
		deadline := time.Now().Add(pollDeadline)
		for time.Now().Before(deadline) {
			if _, ok := events.find(kind, tag); ok {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}
