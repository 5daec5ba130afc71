package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/api"
)

// The event stream of `andon serve --workers 0` shows a run that an `andon
// worker` executes: the stream reads the shared database, not its own
// process's runtime.
func TestEventsOfARunOnAWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	config := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(config, []byte(testConfig(rec, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := processEnv(t)
	common := []string{"--db", filepath.Join(dir, "andon.db"), "--config", config}
	b := startAndon(t, dir, env, append([]string{"worker"}, common...)...)
	b.waitOutput("its banner", contains("andon: worker executing"))
	a, addr := startServeAPI(t, dir, env, append(common, "--workers", "0")...)
	token, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}

	p := &serveProc{t: t, dir: dir, addr: addr}
	r := p.andon("run", "--script", writeScript(t, dir, "echo.yaml", echoScriptYAML))
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)

	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/events?run="+id, nil)
	if len(token) > 0 {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events: %d", resp.StatusCode)
	}
	var steps []api.StepEvent
	var status string
	sc := bufio.NewScanner(resp.Body)
	var name string
	for status != "completed" && sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if n, isName := strings.CutPrefix(line, "event: "); isName {
			name = n
		}
		if !ok {
			continue
		}
		switch name {
		case "run":
			var run api.Run
			if err := json.Unmarshal([]byte(data), &run); err != nil || run.ID != id {
				t.Fatalf("run event %s (%v)", data, err)
			}
			status = run.Status
		case "step":
			var s api.StepEvent
			if err := json.Unmarshal([]byte(data), &s); err != nil || s.RunID != id {
				t.Fatalf("step event %s (%v)", data, err)
			}
			steps = append(steps, s)
		}
	}
	if status != "completed" {
		t.Fatalf("the stream ended (%v) with the run %s", sc.Err(), status)
	}
	// The last step may come with the status or just before it.
	deadline := time.Now().Add(patience)
	for len(steps) < 3 && time.Now().Before(deadline) {
		if !sc.Scan() {
			break
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"run_id"`) {
			var s api.StepEvent
			json.Unmarshal([]byte(data), &s)
			steps = append(steps, s)
		}
	}
	if len(steps) != 3 || steps[0].Kind != "model" || steps[1].Kind != "tool" || steps[1].Tool != "mcp_e2e_echo" ||
		steps[1].Outcome != "ok" || steps[2].Kind != "model" {
		t.Errorf("step events %+v, want model, tool mcp_e2e_echo ok, model", steps)
	}
	if strings.Contains(a.out.String(), "segment ended") {
		t.Errorf("andon serve --workers 0 executed the run:\n%s", a.out.String())
	}
	cancel()
	a.stop()
	b.stop()
}
