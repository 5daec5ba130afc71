package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// checkTaskCancelledOnce checks, from a server's records, that exactly one
// tasks/cancel arrived, naming the task the server created, that the task's
// work stopped, and that no notifications/cancelled was sent.
func checkTaskCancelledOnce(t *testing.T, rec string) {
	t.Helper()
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelled })
	recs := readRecords(t, rec)
	created := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated })
	if created == nil {
		t.Fatalf("no task was created; records:\n%s", dump(recs))
	}
	var cancels []mcptest.Record
	for _, r := range recs {
		if r.Kind == mcptest.Received && r.Method == "tasks/cancel" {
			cancels = append(cancels, r)
		}
		if r.Kind == mcptest.Received && r.Method == "notifications/cancelled" {
			t.Errorf("notifications/cancelled sent for a task: %s", r.Raw)
		}
	}
	if len(cancels) != 1 {
		t.Fatalf("%d tasks/cancel, want 1; records:\n%s", len(cancels), dump(recs))
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(cancels[0].Params, &p); p.TaskID != created.Task {
		t.Errorf("tasks/cancel named %q, the server created %q", p.TaskID, created.Task)
	}
}

func TestCallTaskTool(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mcp.Version20260728, mcp.Version20251125} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			r := runAndon(t, "call", "--stdio", server(rec, "-tasks"), "--protocol", version, "task_wait", `{"ms":50}`)
			r.check(t, exitOK)
			if r.stdout != "task_wait: worked 50ms\n" {
				t.Errorf("stdout %q", r.stdout)
			}
			if !strings.Contains(r.stderr, "andon: task mcptest-task-1 working") || !strings.Contains(r.stderr, "andon: task mcptest-task-1 completed") {
				t.Errorf("stderr does not show the task's status: %q", r.stderr)
			}
		})
	}
}

func TestToolsShowTaskSupport(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "tools", "--stdio", server("", "-tasks"))
	r.check(t, exitOK)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		name, desc, _ := strings.Cut(l, "\t")
		lines[name] = desc
	}
	if !strings.HasSuffix(lines["task_wait"], " [task: required]") || !strings.HasSuffix(lines["task_echo"], " [task: optional]") || strings.Contains(lines["echo"], "[task") {
		t.Errorf("andon tools does not show task support:\n%s", r.stdout)
	}
}

func TestToolsJSONShowsTaskSupport(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "tools", "--stdio", server("", "-tasks"), "--json")
	r.check(t, exitOK)
	var tools []struct {
		Name      string `json:"name"`
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == "task_wait" && tl.Execution.TaskSupport != "required" {
			t.Errorf("task_wait taskSupport = %q", tl.Execution.TaskSupport)
		}
	}
}

// TestCallTaskSignal: Ctrl-C while a task runs sends tasks/cancel for it
// and exits 130.
func TestCallTaskSignal(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mcp.Version20260728, mcp.Version20251125} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
			defer cancel()
			cmd := exec.CommandContext(ctx, andonBin, "call", "--stdio", server(rec, "-tasks"), "--protocol", version, "task_wait")
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated })
			// The task exists on the server; andon knows once its status
			// line is out.
			deadline := time.Now().Add(patience)
			for !strings.Contains(stderr.String(), "andon: task mcptest-task-1 working") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			r := result{code: exitCode(t, cmd.Wait()), stdout: stdout.String(), stderr: stderr.String()}
			r.check(t, exitSignal)
			if !strings.Contains(r.stderr, "cancelling (tasks/cancel)") || !strings.Contains(r.stderr, "andon: call task_wait: ") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkTaskCancelledOnce(t, rec)
		})
	}
}

// TestCallTaskTimeout: --timeout passing while a task runs sends
// tasks/cancel and exits 124.
func TestCallTaskTimeout(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	r := runAndon(t, "call", "--stdio", server(rec, "-tasks"), "--protocol", mcp.Version20251125, "--timeout", "2s", "task_wait")
	r.check(t, exitTimeout)
	if !strings.Contains(r.stderr, "timed out") {
		t.Errorf("stderr %q", r.stderr)
	}
	checkTaskCancelledOnce(t, rec)
}

// TestTasksCommandsAcrossProcesses: a task one andon process started is
// seen, listed and cancelled by others (over HTTP, where the server
// outlives them); the process that started it ends with the task.
func TestTasksCommandsAcrossProcesses(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	url := serveHTTPTasks(t, rec)
	proto := []string{"--url", url, "--protocol", mcp.Version20251125}
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	starter := exec.CommandContext(ctx, andonBin, append(append([]string{"call"}, proto...), "task_wait")...)
	var stderr bytes.Buffer
	starter.Stderr = &stderr
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated })
	id := find(readRecords(t, rec), func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated }).Task

	r := runAndon(t, append(append([]string{"tasks", "get"}, proto...), id)...)
	r.check(t, exitOK)
	if !strings.HasPrefix(r.stdout, id+"\tworking") {
		t.Errorf("tasks get: %q", r.stdout)
	}
	r = runAndon(t, append(append([]string{"tasks", "list"}, proto...), "--json")...)
	r.check(t, exitOK)
	var listed []mcp.Task
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || listed[0].ID != id {
		t.Errorf("tasks list --json: %q (%v)", r.stdout, err)
	}
	r = runAndon(t, append(append([]string{"tasks", "cancel"}, proto...), id)...)
	r.check(t, exitOK)
	if r.stdout != id+"\tcancelled\n" {
		t.Errorf("tasks cancel: %q", r.stdout)
	}
	if code := exitCode(t, starter.Wait()); code != exitToolError {
		t.Errorf("the starting call exited %d, want %d (its task was cancelled); stderr %q", code, exitToolError, stderr.String())
	}
	r = runAndon(t, append(append([]string{"tasks", "cancel"}, proto...), id)...)
	r.check(t, exitOK)
	if !strings.Contains(r.stderr, "had already ended (cancelled)") {
		t.Errorf("second cancel: %q", r.stderr)
	}
	r = runAndon(t, append(append([]string{"tasks", "get"}, proto...), "no-such-task")...)
	r.check(t, exitTransport)
	if !strings.Contains(r.stderr, "task not found") {
		t.Errorf("unknown id: %q", r.stderr)
	}
}

// TestTasksFollow: a process that did not start the task follows it to its
// result; Ctrl-C while following sends tasks/cancel.
func TestTasksFollow(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	url := serveHTTPTasks(t, rec)
	proto := []string{"--url", url, "--protocol", mcp.Version20260728}
	// A task started, and its starter gone: the server keeps it.
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	starter := exec.CommandContext(ctx, andonBin, append(append([]string{"call"}, proto...), "task_wait", `{"ms":60000}`)...)
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated })
	id := find(readRecords(t, rec), func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated }).Task
	starter.Process.Kill() // as a crash would: no tasks/cancel
	starter.Wait()

	follower := exec.CommandContext(ctx, andonBin, append(append([]string{"tasks", "follow"}, proto...), id)...)
	var stderr bytes.Buffer
	follower.Stderr = &stderr
	if err := follower.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		recs := readRecords(t, rec)
		gets := 0
		for _, r := range recs {
			if r.Kind == mcptest.Received && r.Method == "tasks/get" {
				gets++
			}
		}
		if gets > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := follower.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, follower.Wait()); code != exitSignal {
		t.Errorf("follow exited %d, want %d; stderr %q", code, exitSignal, stderr.String())
	}
	checkTaskCancelledOnce(t, rec)

	// A task whose starter died is followed to its result (it may have
	// ended already: the terminal tasks/get carries the result).
	starter = exec.CommandContext(ctx, andonBin, append(append([]string{"call"}, proto...), "task_wait", `{"ms":300}`)...)
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated && r.Task != id })
	second := find(readRecords(t, rec), func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCreated && r.Task != id }).Task
	starter.Process.Kill()
	starter.Wait()
	r := runAndon(t, append(append([]string{"tasks", "follow"}, proto...), second)...)
	r.check(t, exitOK)
	if r.stdout != "task_wait: worked 300ms\n" {
		t.Errorf("tasks follow: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// serveHTTPTasks starts andon mcptest serve over HTTP with the task tools.
func serveHTTPTasks(t *testing.T, rec string) string {
	t.Helper()
	cmd := exec.Command(andonBin, "mcptest", "serve", "-http", "127.0.0.1:0", "-record", rec, "-tasks")
	stdout := &firstLine{done: make(chan struct{})}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case <-stdout.done:
	case <-time.After(patience):
		t.Fatalf("the HTTP test server printed no URL; stderr:\n%s", stderr.String())
	}
	url := stdout.line()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("the HTTP test server printed %q, not a loopback URL", url)
	}
	return url
}
