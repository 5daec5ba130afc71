package main

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// scrapeMetrics GETs url, with token if not empty, and returns its
// samples by series, as the Prometheus text format writes them.
func scrapeMetrics(t *testing.T, url, token string) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: patience}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("unparsable sample %q", line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A worker serves its metrics on --metrics-addr (no token: loopback only,
// and nothing there but counts): the call it made and
// whose cancel it put on the wire; the API process serves the runs by
// status. Each process reports what it did: the API process made no call.
func TestMetricsAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	config := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(config, []byte(testConfig(rec, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := processEnv(t)
	common := []string{"--db", filepath.Join(dir, "andon.db"), "--config", config}
	metricsAddr := freeLoopback(t)
	b := startAndon(t, dir, env, append([]string{"worker", "--watch-interval", "50ms", "--metrics-addr", metricsAddr}, common...)...)
	b.waitOutput("that it serves metrics", contains("andon: serving metrics on http://"+metricsAddr+"/metrics"))
	a, addr := startServeAPI(t, dir, env, append(common, "--workers", "0")...)
	p := &serveProc{t: t, dir: dir, addr: addr}

	r := p.andon("run", "--script", writeScript(t, dir, "slow.yaml", slowScriptYAML))
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	p.andon("cancel", id).check(t, exitOK)
	p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 2 })

	var wm map[string]float64
	deadline := time.Now().Add(patience)
	for {
		wm = scrapeMetrics(t, "http://"+metricsAddr+"/metrics", "")
		if wm[`andon_cancel_to_wire_seconds_count{transport="stdio"}`] >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for series, want := range map[string]float64{
		`andon_tool_calls_total{outcome="cancelled",server="e2e"}`:                 1,
		`andon_tool_call_duration_seconds_count{outcome="cancelled",server="e2e"}`: 1,
		`andon_cancel_to_wire_seconds_count{transport="stdio"}`:                    1,
	} {
		if got := wm[series]; got != want {
			t.Errorf("worker: %s = %v, want %v", series, got, want)
		}
	}
	// The run's fresh reads may be none: its claim and its write's fence
	// are guarded writes that read the row, and the cancel's hint finds
	// the run read cancelled already if a poll came first. The series is
	// there all the same.
	if _, ok := wm[`andon_watcher_store_reads_total{read="watch"}`]; !ok || wm[`andon_watcher_store_reads_total{read="poll"}`] < 1 {
		t.Errorf("worker: the watcher's reads are not counted: watch %v (exported: %v), poll %v",
			wm[`andon_watcher_store_reads_total{read="watch"}`], ok, wm[`andon_watcher_store_reads_total{read="poll"}`])
	}
	for series := range wm {
		if strings.HasPrefix(series, "andon_runs") {
			t.Errorf("worker: %s: the runs are the API's to count", series)
		}
	}

	// The API's needs a token (a viewer's would do); the worker's, on
	// loopback only, does not.
	if resp, err := (&http.Client{Timeout: patience}).Get("http://" + addr + "/metrics"); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("API GET /metrics without a token: %s, want 401", resp.Status)
		}
	}
	am := scrapeMetrics(t, "http://"+addr+"/metrics", readToken(t, dir))
	if got := am[`andon_runs{status="cancelled"}`]; got != 1 {
		t.Errorf(`API: andon_runs{status="cancelled"} = %v, want 1`, got)
	}
	if got, ok := am[`andon_runs{status="running"}`]; !ok || got != 0 {
		t.Errorf(`API: andon_runs{status="running"} = %v (present: %v), want 0`, got, ok)
	}
	for series := range am {
		if strings.HasPrefix(series, "andon_tool_calls_total") {
			t.Errorf("API: %s: serve --workers 0 made no call", series)
		}
	}
	// The worker serves /metrics only.
	if resp, err := (&http.Client{Timeout: patience}).Get("http://" + metricsAddr + "/v1/health"); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("worker GET /v1/health: %s, want 404", resp.Status)
		}
	}
	a.stop()
	b.stop()
}

// --metrics-addr must be on loopback.
func TestWorkerMetricsAddrIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	r := runAndonIn(t, t.TempDir(), "worker", "--metrics-addr", "0.0.0.0:9100")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "--metrics-addr") || !strings.Contains(r.stderr, "not a loopback address") {
		t.Errorf("stderr %q", r.stderr)
	}
}
