package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// The floor is what a round trip costs with no MCP client at all: a raw
// client on the same server that writes request bytes encoded once, before
// the benchmark starts, and reads the reply without decoding it. It is
// what the server, the pipes or the loopback TCP stack and the scheduler
// cost, so a client's round trip divided by the floor's is the client's
// own overhead. The floor's requests are the ones andon sends: the same
// params (with the 2026-07-28 _meta envelope), the same headers; only the
// id changes from call to call, spliced between two pre-encoded halves.

// floorClientInfo is the clientInfo the floor's requests carry: andon's,
// as a test binary reports it.
var floorClientInfo = map[string]string{"name": "andon", "version": "devel"}

// floorFrame is one pre-encoded request, split around its id.
type floorFrame struct{ head, tail []byte }

// newFloorFrame encodes a request of method with params, leaving the id to
// each call. A nil params sends none.
func newFloorFrame(method string, params any) floorFrame {
	var tail bytes.Buffer
	tail.WriteString(`,"method":`)
	m, _ := json.Marshal(method)
	tail.Write(m)
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			panic(err) // the params are the test's own literals
		}
		tail.WriteString(`,"params":`)
		tail.Write(p)
	}
	tail.WriteString("}")
	return floorFrame{head: []byte(`{"jsonrpc":"2.0","id":`), tail: tail.Bytes()}
}

// append appends the frame with id to b.
func (f floorFrame) append(b []byte, id int64) []byte {
	b = append(b, f.head...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, f.tail...)
}

// floorNotification encodes a notification once.
func floorNotification(method string, params any) []byte {
	f := newFloorFrame(method, params)
	b := []byte(`{"jsonrpc":"2.0"`)
	return append(b, f.tail...)
}

// floorMeta is the _meta envelope andon puts in every 2026-07-28 request.
func floorMeta(revision string) map[string]any {
	if revision != mcp.Version20260728 {
		return nil
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    revision,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         floorClientInfo,
	}
}

// floorEcho is the pre-encoded tools/call of echo {"text":"hello"}.
func floorEcho(revision string) floorFrame {
	params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}}
	if meta := floorMeta(revision); meta != nil {
		params["_meta"] = meta
	}
	return newFloorFrame("tools/call", params)
}

// floorInitialize is the pre-encoded initialize of a handshake-era revision.
func floorInitialize(revision string) floorFrame {
	return newFloorFrame("initialize", map[string]any{
		"protocolVersion": revision,
		"capabilities":    map[string]any{},
		"clientInfo":      floorClientInfo,
	})
}

// checkFloorReply is all the floor looks at in a reply: that it is not an
// error, read off the raw bytes.
func checkFloorReply(reply []byte) error {
	if bytes.Contains(reply, []byte(`"error":`)) || bytes.Contains(reply, []byte(`"isError":true`)) {
		return fmt.Errorf("the server answered with an error: %.200s", reply)
	}
	return nil
}

// floorStdio is the floor over stdio: a pipe to the same server process the
// clients get, one request and one reply at a time.
type floorStdio struct {
	w    io.Writer
	r    *bufio.Reader
	echo floorFrame
	buf  []byte
	id   int64
}

func (f *floorStdio) call(ctx context.Context, name string, _ map[string]any) error {
	if name != "echo" {
		return fmt.Errorf("the floor only calls echo, not %q", name)
	}
	f.id++
	f.buf = append(f.echo.append(f.buf[:0], f.id), '\n')
	if _, err := f.w.Write(f.buf); err != nil {
		return err
	}
	return f.readReply()
}

// readReply reads one line and checks it without decoding it.
func (f *floorStdio) readReply() error {
	line, err := f.r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("reading the reply: %w", err)
	}
	return checkFloorReply(line)
}

func (*floorStdio) isCancelled(error) bool { return false }

// startFloorStdio starts a go-sdk server subprocess, as startBench does for
// the clients, and shakes hands with it from pre-encoded bytes.
func startFloorStdio(b *testing.B, revision string, env ...string) benchClient {
	b.Helper()
	exe, env := selfCommand(b, roleGoSDKServer, env...)
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
	b.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the go-sdk server under the floor: %v", err)
		}
	})
	f := &floorStdio{w: stdin, r: bufio.NewReaderSize(stdout, 64<<10), echo: floorEcho(revision)}
	var handshake floorFrame
	if revision == mcp.Version20260728 {
		handshake = newFloorFrame("server/discover", map[string]any{"_meta": floorMeta(revision)})
	} else {
		handshake = floorInitialize(revision)
	}
	f.id++
	if _, err := stdin.Write(append(handshake.append(nil, f.id), '\n')); err != nil {
		b.Fatal(err)
	}
	line, err := f.r.ReadSlice('\n')
	if err != nil {
		b.Fatalf("the floor's handshake: %v", err)
	}
	if !bytes.Contains(line, []byte(revision)) {
		b.Fatalf("the server did not answer %s to the floor's handshake: %s", revision, line)
	}
	if revision != mcp.Version20260728 {
		if _, err := stdin.Write(append(floorNotification("notifications/initialized", nil), '\n')); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// floorHTTP is the floor over Streamable HTTP: net/http POSTs of a
// pre-encoded body with andon's headers, their replies read to the end and
// not decoded.
type floorHTTP struct {
	hc     *http.Client
	url    string
	header http.Header // shared by every request; net/http never writes it
	echo   floorFrame
	id     int64
}

func (f *floorHTTP) call(ctx context.Context, name string, _ map[string]any) error {
	if name != "echo" {
		return fmt.Errorf("the floor only calls echo, not %q", name)
	}
	f.id++
	_, err := f.post(ctx, f.echo.append(make([]byte, 0, 64+len(f.echo.tail)), f.id), true)
	return err
}

// post POSTs body and returns the reply, which it checks if check is set.
func (f *floorHTTP) post(ctx context.Context, body []byte, check bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = f.header
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var reply bytes.Buffer
	if _, err := reply.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %s: %.200s", resp.Status, reply.Bytes())
	}
	if check {
		if err := checkFloorReply(reply.Bytes()); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (*floorHTTP) isCancelled(error) bool { return false }

// floorSSE is the floor over HTTP+SSE: POSTs of a pre-encoded body to the
// session's endpoint, and the reply read off the GET stream as raw lines up
// to the blank line that ends its event.
type floorSSE struct {
	hc       *http.Client
	endpoint string
	header   http.Header
	stream   *bufio.Reader
	echo     floorFrame
	id       int64
}

func (f *floorSSE) call(ctx context.Context, name string, _ map[string]any) error {
	if name != "echo" {
		return fmt.Errorf("the floor only calls echo, not %q", name)
	}
	f.id++
	if err := f.post(ctx, f.echo.append(make([]byte, 0, 64+len(f.echo.tail)), f.id)); err != nil {
		return err
	}
	return f.readEvent()
}

func (f *floorSSE) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = f.header
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST to the endpoint: HTTP %s", resp.Status)
	}
	return nil
}

// readEvent reads the stream up to the end of the next event with data,
// and checks that data without decoding it.
func (f *floorSSE) readEvent() error {
	var data []byte
	for {
		line, err := f.stream.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the event stream: %w", err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data = line
		case len(bytes.TrimSpace(line)) == 0 && data != nil:
			return checkFloorReply(data)
		}
	}
}

func (*floorSSE) isCancelled(error) bool { return false }

// startFloorHTTP shakes hands with the go-sdk server at url for gen from
// pre-encoded bytes, as andon would, and returns the floor for it.
func startFloorHTTP(b *testing.B, gen httpGen, url string, dials *atomic.Int64) benchClient {
	b.Helper()
	hc := benchHTTPClient(b, dials)
	ctx, cancel := context.WithTimeout(context.Background(), pollDeadline)
	defer cancel()
	header := http.Header{
		"Accept":       {"application/json, text/event-stream"},
		"Content-Type": {"application/json"},
	}
	switch gen.mode {
	case httpModeStateless:
		header.Set("MCP-Protocol-Version", gen.revision)
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", "echo")
		return &floorHTTP{hc: hc, url: url, header: header, echo: floorEcho(gen.revision)}
	case httpModeStateful:
		f := &floorHTTP{hc: hc, url: url, header: header.Clone(), echo: floorEcho(gen.revision)}
		f.id++
		resp, err := f.post(ctx, floorInitialize(gen.revision).append(nil, f.id), false)
		if err != nil {
			b.Fatalf("the floor's initialize: %v", err)
		}
		session := resp.Header.Get("Mcp-Session-Id")
		if session == "" {
			b.Fatal("the stateful server gave the floor no session")
		}
		f.header.Set("Mcp-Session-Id", session)
		f.header.Set("MCP-Protocol-Version", gen.revision)
		if _, err := f.post(ctx, floorNotification("notifications/initialized", nil), false); err != nil {
			b.Fatalf("the floor's initialized: %v", err)
		}
		b.Cleanup(func() {
			req, err := http.NewRequest(http.MethodDelete, url, nil)
			if err != nil {
				return
			}
			req.Header = f.header
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		return f
	case httpModeSSE:
		return startFloorSSE(b, ctx, gen, url, hc, header)
	}
	b.Fatalf("unknown HTTP mode %q", gen.mode)
	return nil
}

func startFloorSSE(b *testing.B, ctx context.Context, gen httpGen, base string, hc *http.Client, header http.Header) benchClient {
	b.Helper()
	streamCtx, endStream := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, base, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		endStream()
		b.Fatalf("the floor's GET stream: %v", err)
	}
	b.Cleanup(func() {
		endStream()
		resp.Body.Close()
	})
	stream := bufio.NewReaderSize(resp.Body, 64<<10)
	var endpoint string
	for endpoint == "" {
		line, err := stream.ReadString('\n')
		if err != nil {
			b.Fatalf("reading the endpoint event: %v", err)
		}
		if rest, ok := strings.CutPrefix(line, "data:"); ok {
			endpoint = strings.TrimSpace(rest)
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	ep, err := u.Parse(endpoint)
	if err != nil {
		b.Fatalf("the endpoint %q: %v", endpoint, err)
	}
	f := &floorSSE{hc: hc, endpoint: ep.String(), header: header, stream: stream, echo: floorEcho(gen.revision)}
	// Skip the rest of the endpoint event.
	if _, err := stream.ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	f.id++
	if err := f.post(ctx, floorInitialize(gen.revision).append(nil, f.id)); err != nil {
		b.Fatalf("the floor's initialize: %v", err)
	}
	if err := f.readEvent(); err != nil {
		b.Fatalf("the floor's initialize: %v", err)
	}
	if err := f.post(ctx, floorNotification("notifications/initialized", nil)); err != nil {
		b.Fatalf("the floor's initialized: %v", err)
	}
	return f
}

// errFloorNA marks a benchmark the floor takes no part in: it has no
// client to cancel.
var errFloorNA = errors.New("n/a: the floor is a round trip only; it has no client to cancel")
