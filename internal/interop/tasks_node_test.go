package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/nodepeer"
	"github.com/andonhq/andon/mcp"
)

// nodeBudget bounds what a test waits for from a Node.js peer: generous,
// since node starts slowly on a loaded machine. It measures nothing.
const nodeBudget = 60 * time.Second

// logLines is a concurrency-safe sink for a peer's log lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine waits until the log holds a line containing s.
func (l *logLines) waitLine(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(nodeBudget)
	for !strings.Contains(l.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the peer never logged %q; its log:\n%s", s, l.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nodeScriptDir returns a folder holding script (from testdata) next to a
// node_modules link to modules: ES modules resolve packages from the
// script's folder up, not from NODE_PATH.
func nodeScriptDir(t *testing.T, modules, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startNodeHTTP runs node with args, which must print "ANDON_LISTENING
// <port>" on stderr once it listens on 127.0.0.1, and returns the endpoint
// and the peer's stderr. The process is killed when the test ends.
func startNodeHTTP(t *testing.T, dir string, env []string, args ...string) (string, *logLines) {
	t.Helper()
	cmd := exec.Command(nodepeer.Node(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	logs := &logLines{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			logs.Write([]byte(line + "\n"))
			if p, ok := strings.CutPrefix(line, "ANDON_LISTENING "); ok {
				select {
				case port <- p:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
	})
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/mcp", logs
	case <-time.After(nodeBudget):
		t.Fatalf("the node peer never listened; its log:\n%s", logs.String())
		return "", nil
	}
}

// connectTasks connects andon's client, pinned to 2025-11-25 (the Node.js
// peers' task revision), with its log in logs.
func connectTasks(t *testing.T, tr mcp.Transport, logs io.Writer, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	o := mcp.ClientOptions{}
	if opts != nil {
		o = *opts
	}
	o.ProtocolVersion = mcp.Version20251125
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), nodeBudget)
	defer cancel()
	c, err := mcp.Connect(ctx, tr, &o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.TasksSupported() {
		t.Fatalf("the peer's tasks were not detected; capabilities %s", c.Server().Capabilities)
	}
	return c
}

// cancelOnCreate cancels a call's context once its task exists, and
// remembers the task's id.
func cancelOnCreate(cancel context.CancelFunc, id *string) func(mcp.Task) error {
	return func(t mcp.Task) error {
		*id = t.ID
		cancel()
		return nil
	}
}

// TestTasksTypeScriptSDKServer: a server on the official TypeScript SDK
// with task tools, over stdio and Streamable HTTP. A required-task tool is
// called as a task transparently; a cancelled context reaches the task's
// work through tasks/cancel (the server logs it); over HTTP another client
// cancels a task by id.
func TestTasksTypeScriptSDKServer(t *testing.T) {
	modules := nodepeer.Install(t, nodepeer.SDK)
	dir := nodeScriptDir(t, modules, "tasks_sdk_server.mjs")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			logs := &logLines{}
			var tr func() mcp.Transport
			if transport == "stdio" {
				tr = func() mcp.Transport {
					cmd := mcp.Command(nodepeer.Node(t), filepath.Join(dir, "tasks_sdk_server.mjs"), "stdio")
					cmd.Dir = dir
					return cmd
				}
			} else {
				url, peerLog := startNodeHTTP(t, dir, nil, "tasks_sdk_server.mjs", "http")
				logs = peerLog
				tr = func() mcp.Transport { return mcp.HTTP(url, nil) }
			}
			c := connectTasks(t, tr(), logs, nil)

			res, err := c.CallTool(context.Background(), "quick", nil, &mcp.CallOptions{Timeout: nodeBudget})
			if err != nil {
				t.Fatalf("quick: %v", err)
			}
			if res.Text() != "quick done" {
				t.Errorf("quick = %q", res.Text())
			}

			ctx, cancel := context.WithCancel(context.Background())
			var id string
			_, err = c.CallTool(ctx, "work", nil, &mcp.CallOptions{Timeout: nodeBudget, OnTaskCreated: cancelOnCreate(cancel, &id)})
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("work: %v, want ErrCancelled", err)
			}
			logs.waitLine(t, "ANDON_WORK_CANCELLED "+id)
			task, err := c.GetTask(context.Background(), id, nil)
			if err != nil || task.Status != mcp.TaskCancelled {
				t.Errorf("GetTask after the cancel = %+v, %v; want cancelled", task, err)
			}
			if transport != "http" {
				return
			}
			// A client that did not create the task stops it.
			started := make(chan string, 1)
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(context.Background(), "work", nil, &mcp.CallOptions{Timeout: nodeBudget, OnTaskCreated: func(t mcp.Task) error {
					started <- t.ID
					return nil
				}})
				errc <- err
			}()
			id = <-started
			other := connectTasks(t, tr(), io.Discard, nil)
			answer, err := other.CancelTask(context.Background(), id, nil)
			if err != nil || answer.Status != mcp.TaskCancelled {
				t.Fatalf("CancelTask from another client = %+v, %v", answer, err)
			}
			logs.waitLine(t, "ANDON_WORK_CANCELLED "+id)
			var te *mcp.TaskError
			if err := <-errc; !errors.As(err, &te) || te.Status != mcp.TaskCancelled {
				t.Errorf("the creating call: %v, want a cancelled *TaskError", err)
			}
			if _, err := other.CancelTask(context.Background(), id, nil); !errors.Is(err, mcp.ErrTaskTerminal) {
				t.Errorf("cancelling it again: %v, want ErrTaskTerminal (the SDK answers -32602)", err)
			}
		})
	}
}

// TestTasksServerEverything: the reference server's task-required
// simulate-research-query, over stdio and Streamable HTTP (bound to
// 127.0.0.1 by a wrapper: the server itself listens on every interface).
func TestTasksServerEverything(t *testing.T) {
	modules := nodepeer.Install(t, nodepeer.ServerEverything)
	entry := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	dir := nodeScriptDir(t, modules, "tasks_listen_loopback.mjs")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var tr func() mcp.Transport
			if transport == "stdio" {
				tr = func() mcp.Transport { return mcp.Command(nodepeer.Node(t), entry, "stdio") }
			} else {
				url, _ := startNodeHTTP(t, dir, []string{"PORT=0"}, "tasks_listen_loopback.mjs", entry, "streamableHttp")
				tr = func() mcp.Transport { return mcp.HTTP(url, nil) }
			}
			var asked string
			c := connectTasks(t, tr(), io.Discard, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, params json.RawMessage) (any, error) {
					asked = string(params)
					return map[string]any{"action": "accept", "content": map[string]any{"interpretation": "historical"}}, nil
				},
			})
			tools, err := c.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				if tl.Name == "simulate-research-query" && tl.TaskSupport != mcp.TaskRequired {
					t.Errorf("simulate-research-query TaskSupport = %q, want required", tl.TaskSupport)
				}
			}

			var messages []string
			res, err := c.CallTool(context.Background(), "simulate-research-query", map[string]any{"topic": "andon"}, &mcp.CallOptions{
				Timeout:      nodeBudget,
				OnTaskStatus: func(t mcp.Task) { messages = append(messages, string(t.Status)+": "+t.StatusMessage) },
			})
			if err != nil {
				t.Fatalf("simulate-research-query: %v", err)
			}
			if !strings.Contains(res.Text(), "# Research Report: andon") {
				t.Errorf("result = %.200q", res.Text())
			}
			if len(messages) == 0 || !strings.HasPrefix(messages[len(messages)-1], "completed") {
				t.Errorf("status seen: %q", messages)
			}

			// input_required: the server asks through tasks/result's
			// stream; the elicitation handler answers.
			res, err = c.CallTool(context.Background(), "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true}, &mcp.CallOptions{Timeout: nodeBudget})
			if err != nil {
				t.Fatalf("ambiguous simulate-research-query: %v", err)
			}
			if !strings.Contains(asked, "multiple interpretations") || !strings.Contains(res.Text(), "python (historical)") {
				t.Errorf("elicitation %q, result %.300q", asked, res.Text())
			}

			// A cancelled context sends tasks/cancel: the server says the
			// task is cancelled.
			ctx, cancel := context.WithCancel(context.Background())
			var id string
			_, err = c.CallTool(ctx, "simulate-research-query", map[string]any{"topic": "andon"}, &mcp.CallOptions{Timeout: nodeBudget, OnTaskCreated: cancelOnCreate(cancel, &id)})
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("cancelled call: %v", err)
			}
			deadline := time.Now().Add(nodeBudget)
			for {
				task, err := c.GetTask(context.Background(), id, nil)
				if err != nil {
					t.Fatalf("GetTask: %v", err)
				}
				if task.Status == mcp.TaskCancelled {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the task is %s, never cancelled", task.Status)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
