package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecordsAndWaitFor(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	c := s.Client(t, nil)
	if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := s.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolFinished })
	if err != nil || rec.Tool != "echo" {
		t.Fatalf("WaitFor = %+v, %v", rec, err)
	}
	var methods []string
	for _, r := range s.ReceivedMessages("") {
		methods = append(methods, r.Method)
	}
	if got := strings.Join(methods, ","); got != "server/discover,tools/call" {
		t.Errorf("received %s, want server/discover,tools/call", got)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if _, err := s.WaitFor(ctx2, func(mcptest.Record) bool { return false }); err == nil {
		t.Error("WaitFor for a record that never comes returned no error")
	}
}

// A modern request without the required _meta is refused, as the 2026-07-28
// spec requires; one at an unserved revision gets -32022 with the list.
func TestModernValidation(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(&mcptest.Options{Versions: []string{mcp.Version20251125}})
	t.Cleanup(s.Close)
	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n")
	if err := s.Serve(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("response %q: %v", out.String(), err)
	}
	if resp.Error.Code != mcp.CodeUnsupportedProtocolVersion || len(resp.Error.Data.Supported) != 1 {
		t.Errorf("response = %s, want -32022 listing 2025-11-25", out.String())
	}
}

func TestMain_RecordFileAndFlags(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	var out, errOut bytes.Buffer
	if code := mcptest.Main(context.Background(), []string{"-record", path, "-versions", "2025-06-18,2024-11-05"}, in, &out, &errOut); code != 0 {
		t.Fatalf("Main = %d, stderr %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("initialize answer = %s", out.String())
	}
	recs, err := mcptest.ReadRecords(path)
	if err != nil || len(recs) != 1 || recs[0].Method != "initialize" {
		t.Fatalf("ReadRecords = %+v, %v", recs, err)
	}
	if code := mcptest.Main(context.Background(), []string{"-no-such-flag"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("Main with a bad flag = %d, want 2", code)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// Garbage in gets a parse error back, not a crash; notifications get no answer.
func TestServeToleratesGarbage(t *testing.T) {
	t.Parallel()
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	var out bytes.Buffer
	in := strings.NewReader("nonsense\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}` + "\n")
	if err := s.Serve(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 || !strings.Contains(out.String(), "-32700") {
		t.Errorf("output = %q, want exactly one parse error", out.String())
	}
}

func ExampleServer() {
	s := mcptest.NewServer(nil)
	defer s.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, s.Transport(), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 60000}, &mcp.CallOptions{Timeout: 20 * time.Millisecond})
	rec, _ := s.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled })
	fmt.Println(err != nil, rec.Tool)
	// Output: true slow
}

func TestMain_ServesHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- mcptest.Main(ctx, []string{"-http", "127.0.0.1:0", "-generations", "sessions"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	url, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	// A transport of its own, whose idle connections are closed before
	// goleak looks: http.DefaultClient's would outlive the test.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c, err := mcp.Connect(ctx, mcp.HTTP(strings.TrimSpace(url), &http.Client{Transport: tr}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != mcp.Version20251125 {
		t.Errorf("negotiated %s over a sessions-only server", c.ProtocolVersion())
	}
	c.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("Main = %d", code)
	}
}
