package loadtest_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/loadtest"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// patience bounds a whole harness test on a loaded machine: subprocesses
// start, runs are claimed, calls held and cancelled. Nothing is timed.
const patience = 2 * time.Minute

// backends are the databases the harness runs on.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return database(t, "sqlite") },
		"postgres": func(t *testing.T) string { return database(t, "postgres") },
	}
}

// database returns a fresh database of backend.
func database(t testing.TB, backend string) string {
	if backend == "postgres" {
		return pgtest.Schema(t)
	}
	return filepath.Join(t.TempDir(), "andon.db")
}

// start starts a harness whose node can hold every run a test holds.
func start(t testing.TB, db, transport string) *loadtest.Harness {
	t.Helper()
	return startWorkers(t, db, transport, loadtest.MaxWorkers)
}

// startWorkers starts a harness whose node executes workers runs at once
// (0: the node's default), closed at cleanup.
func startWorkers(t testing.TB, db, transport string, workers int) *loadtest.Harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	h, err := loadtest.Start(ctx, loadtest.Config{DB: db, Dir: t.TempDir(), Transport: transport, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("the node stopped on its own: %v", err)
		}
	})
	return h
}

// The harness's own checks: every cancelled call is seen cancelled by the
// server (Cancel waits for each), no run is left running (Measure checks
// the store), and nothing outlives the harness (goleak, in TestMain). A
// storm cancels a wave of runs at once and replaces them.
func TestStormCancelsEveryCall(t *testing.T) {
	t.Parallel()
	for name, db := range backends(t) {
		for _, transport := range []string{loadtest.Stdio, loadtest.HTTP} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				h := start(t, db(t), transport)
				ctx, cancel := context.WithTimeout(t.Context(), patience)
				defer cancel()
				res, err := h.Measure(ctx, loadtest.Storm{InFlight: 8, Wave: 4, Samples: 8})
				if err != nil {
					t.Fatal(err)
				}
				if res.ToWire.N != 8 || res.ToStopped.N != 8 || res.Took.N != 8 {
					t.Errorf("measured %d cancels to the wire, %d handlers stopped and %d returns; want 8 each", res.ToWire.N, res.ToStopped.N, res.Took.N)
				}
				if res.LastStepsMissing != 0 {
					t.Errorf("%d cancelled runs recorded no cancelled step", res.LastStepsMissing)
				}
				if res.PerCancel < 1 {
					t.Errorf("%.1f statements per cancel: the counter missed the cancel's own write", res.PerCancel)
				}
				t.Logf("%+v", res)
			})
		}
	}
}

// Short runs complete, each with at least its own statements counted.
func TestShortRunsComplete(t *testing.T) {
	t.Parallel()
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := start(t, db(t), loadtest.Stdio)
			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			tp, err := h.ShortRuns(ctx, 10, 4)
			if err != nil {
				t.Fatal(err)
			}
			if tp.Runs != 10 || tp.PerRun < 5 {
				t.Errorf("%+v: want 10 runs of several statements each", tp)
			}
			t.Logf("%+v", tp)
		})
	}
}

// Across processes — andon serve --workers 0 and two andon workers on one
// database, runs submitted and cancelled through the API — the same
// checks hold: every cancelled call is seen cancelled by its server (each
// worker's own), no run is left running, every process exits cleanly when
// the harness closes (Close fails otherwise) and nothing of the harness
// outlives it (goleak, in TestMain).
func TestProcessesCancelEveryCall(t *testing.T) {
	andon := buildAndon(t)
	for name, db := range backends(t) {
		for _, transport := range []string{loadtest.Stdio, loadtest.HTTP} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), patience)
				defer cancel()
				h, err := loadtest.Start(ctx, loadtest.Config{DB: db(t), Dir: t.TempDir(), Transport: transport,
					Processes: 2, Andon: andon, Workers: 64})
				if err != nil {
					t.Fatal(err)
				}
				res, err := h.Measure(ctx, loadtest.Storm{InFlight: 8, Wave: 4, Samples: 8})
				if cerr := h.Close(); cerr != nil {
					t.Errorf("closing: %v", cerr)
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.ToWire.N != 8 || res.ToStopped.N != 8 || res.Took.N != 8 {
					t.Errorf("measured %d cancels to the wire, %d handlers stopped and %d returns; want 8 each", res.ToWire.N, res.ToStopped.N, res.Took.N)
				}
				if res.Counted || res.PerCancel != 0 {
					t.Errorf("statements counted across processes (%+v): the harness cannot see them", res)
				}
				if res.LastStepsMissing != 0 {
					t.Errorf("%d cancelled runs recorded no cancelled step", res.LastStepsMissing)
				}
				if res.GoroutinesPerRun <= 0 {
					t.Errorf("%.1f goroutines per run in flight: the workers' metrics were not read", res.GoroutinesPerRun)
				}
				t.Logf("%+v", res)
			})
		}
	}
}

// buildAndon builds cmd/andon once for the tests that run it.
func buildAndon(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "andon")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", out, "github.com/andonhq/andon/cmd/andon")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building andon: %v\n%s", err, msg)
	}
	return out
}

// The hiccup meter spins as many threads as asked, for as long as asked,
// reports its gaps longest first, and stops when its context ends.
func TestMeasureHiccups(t *testing.T) {
	h := loadtest.MeasureHiccups(t.Context(), 2, 20*time.Millisecond)
	if h.Threads != 2 || h.Elapsed < 20*time.Millisecond {
		t.Fatalf("spun %d threads for %v, want 2 for at least 20ms", h.Threads, h.Elapsed)
	}
	if !slices.IsSortedFunc(h.Gaps, func(a, b time.Duration) int { return int(b - a) }) {
		t.Fatalf("gaps %v are not longest first", h.Gaps)
	}
	for _, g := range h.Gaps {
		if g <= loadtest.HiccupMin {
			t.Fatalf("gap %v recorded, want only gaps over %v", g, loadtest.HiccupMin)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if h := loadtest.MeasureHiccups(ctx, 1, time.Hour); h.Elapsed > time.Minute {
		t.Fatalf("a cancelled meter spun for %v, want it to stop", h.Elapsed)
	}
}
