// Command andon-load drives andon's load harness (internal/loadtest): for
// each number of runs in flight it starts a fresh node on a fresh database,
// holds the runs in mcptest's slow tool over stdio or HTTP, cancels them in
// waves, and prints one line per measurement; then it measures short runs
// per second. Nothing here asserts a number.
//
//	go run ./cmd/andon-load -db sqlite -transport stdio -inflight 100,1000 -waves 1,16,100,all
//	go run ./cmd/andon-load -db postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	go run ./cmd/andon-load -mode processes -processes 2 -db sqlite -inflight 1000 -waves 1,16,100,all
//
// With a PostgreSQL URL, every node gets a schema of its own, dropped
// afterwards. With -mode processes, andon runs as an operator deploys it:
// `andon serve --workers 0` and -processes `andon worker` processes on the
// database (the andon binary given with -andon, or built from this
// module), runs submitted and cancelled through the API.
//
// With -hiccups, it measures the machine instead: the gaps in which a
// thread that never blocks did not run, with a CPU to spare and with none
// (a storm's tail is read against them).
//
//	go run ./cmd/andon-load -hiccups 20s
//
// With -trace-report, it reads an execution trace that -trace wrote and
// says, wave by wave, where the wave's time went.
//
//	go run ./cmd/andon-load -db sqlite -inflight 1000 -waves 100 -samples 1000 -short-runs 0 -trace storm.trace
//	go run ./cmd/andon-load -trace-report storm.trace
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/internal/loadtest"
	"github.com/andonhq/andon/sqlstore"
)

func main() {
	loadtest.MaybeServe() // this executable is the MCP server's too
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "andon-load:", err)
		os.Exit(1)
	}
}

type options struct {
	db, transport     string
	mode, andon       string
	processes         int
	inflight          []int
	waves             []string
	samples           int
	shortRuns, submit int
	workers           int
	verbose           bool
	cpuProfile        string
	blockProfile      string
	mutexProfile      string
	trace             string
	hiccups           time.Duration
	traceReport       string
	traceSkip         time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("andon-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var inflight, waves string
	fs.StringVar(&o.db, "db", "sqlite", "`database`: sqlite (a file in a temp dir) or a PostgreSQL URL")
	fs.StringVar(&o.transport, "transport", loadtest.Stdio, "how the node reaches the MCP server: stdio or http")
	fs.StringVar(&o.mode, "mode", "in-process", "how andon runs: in-process (one node in this process) or processes (andon serve --workers 0 beside -processes andon workers)")
	fs.IntVar(&o.processes, "processes", 2, "with -mode processes: how many andon worker processes")
	fs.StringVar(&o.andon, "andon", "", "with -mode processes: the andon `binary` (default: go build ./cmd/andon of this module)")
	fs.StringVar(&inflight, "inflight", "100,1000", "comma-separated `numbers` of runs in flight, one node each")
	fs.StringVar(&waves, "waves", "1,16,100,all", "comma-separated cancels at once: a number, or all")
	fs.IntVar(&o.samples, "samples", 200, "cancels measured per wave size (at least one wave)")
	fs.IntVar(&o.shortRuns, "short-runs", 300, "one-tool-call runs for runs/s (0: skip)")
	fs.IntVar(&o.submit, "submitters", 16, "goroutines submitting the short runs")
	fs.IntVar(&o.workers, "workers", agent.DefaultMaxConcurrentRuns, "the node's --workers for short runs")
	fs.BoolVar(&o.verbose, "v", false, "log the node's warnings to stderr")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the storms (not the short runs) to `file`: this process only (with -mode processes, the harness, not andon)")
	fs.StringVar(&o.blockProfile, "blockprofile", "", "write a profile of where goroutines waited during the storms to `file`")
	fs.StringVar(&o.mutexProfile, "mutexprofile", "", "write a profile of contended mutexes during the storms to `file`")
	fs.StringVar(&o.trace, "trace", "", "write an execution trace of the storms to `file` (each wave is a trace task, \"cancel wave\")")
	fs.DurationVar(&o.hiccups, "hiccups", 0, "only measure the machine's own stalls: spin one thread, then one per CPU, each for `duration`, and print the gaps in which a thread that never blocks did not run")
	fs.StringVar(&o.traceReport, "trace-report", "", "only report, wave by wave, what an execution trace written with -trace holds: the process's CPU per millisecond, the cancels written, system calls over 1 ms and the goroutines that ran; reads `file`")
	fs.DurationVar(&o.traceSkip, "trace-skip", 0, "with -trace-report: leave out the first `duration` of each wave")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.traceReport != "" {
		f, err := os.Open(o.traceReport)
		if err != nil {
			return err
		}
		defer f.Close()
		return loadtest.TraceReport(f, stdout, loadtest.TraceReportOptions{Skip: o.traceSkip})
	}
	if o.hiccups > 0 {
		for _, threads := range slices.Compact([]int{1, runtime.NumCPU()}) {
			fmt.Fprintln(stdout, loadtest.MeasureHiccups(ctx, threads, o.hiccups))
		}
		return ctx.Err()
	}
	for _, f := range strings.Split(inflight, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > loadtest.MaxWorkers {
			return fmt.Errorf("-inflight %q: want numbers from 1 to %d", f, loadtest.MaxWorkers)
		}
		o.inflight = append(o.inflight, n)
	}
	o.waves = strings.Split(waves, ",")
	switch {
	case o.mode == "in-process":
		o.processes = 0
	case o.mode != "processes":
		return fmt.Errorf("-mode %q: want in-process or processes", o.mode)
	case o.processes < 1:
		return fmt.Errorf("-processes %d: want at least one worker", o.processes)
	}
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	dir, err := os.MkdirTemp("", "andon-load")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	backend := "sqlite"
	if sqlstore.IsPostgres(o.db) {
		backend = "postgres"
	}
	stopProfiles, err := profiles(o)
	if err != nil {
		return err
	}
	for _, n := range o.inflight {
		if err := storms(ctx, o, n, backend, dir, logger, stdout); err != nil {
			return errors.Join(err, stopProfiles())
		}
	}
	if err := stopProfiles(); err != nil {
		return err
	}
	if o.shortRuns > 0 {
		return short(ctx, o, backend, dir, logger, stdout)
	}
	return nil
}

// storms measures every wave size with n runs in flight, on one node.
func storms(ctx context.Context, o options, n int, backend, dir string, logger *slog.Logger, stdout io.Writer) error {
	h, cleanup, err := harness(ctx, o, backend, dir, loadtest.MaxWorkers, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	for _, w := range o.waves {
		wave := n
		if w != "all" {
			if wave, err = strconv.Atoi(w); err != nil || wave < 1 {
				return fmt.Errorf("-waves %q: want numbers or all", w)
			}
		}
		if wave > n {
			continue
		}
		res, err := h.Measure(ctx, loadtest.Storm{InFlight: n, Wave: wave, Samples: o.samples})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "storm backend=%s transport=%s %s inflight=%d wave=%s cancels=%d "+
			"wire_p50_ms=%.2f wire_p99_ms=%.2f wire_max_ms=%.2f stopped_p50_ms=%.2f stopped_p99_ms=%.2f stopped_max_ms=%.2f "+
			"took_p50_ms=%.2f took_p99_ms=%.2f took_max_ms=%.2f after_took_p50_ms=%.2f after_took_p99_ms=%.2f %s %s goroutines_per_run=%.1f idle_polls_per_interval=%.2f %s last_steps_missing=%d\n",
			backend, o.transport, modeField(o), n, w, res.ToWire.N,
			ms(res.ToWire.P50), ms(res.ToWire.P99), ms(res.ToWire.Max), ms(res.ToStopped.P50), ms(res.ToStopped.P99), ms(res.ToStopped.Max),
			ms(res.Took.P50), ms(res.Took.P99), ms(res.Took.Max), ms(res.AfterTook.P50), ms(res.AfterTook.P99), statements(res), memory(res),
			res.GoroutinesPerRun, res.IdlePollsPerInterval, idleStatements(res), res.LastStepsMissing)
	}
	return cleanup()
}

func short(ctx context.Context, o options, backend, dir string, logger *slog.Logger, stdout io.Writer) error {
	h, cleanup, err := harness(ctx, o, backend, dir, o.workers, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	// One run first: the MCP server's process starts, the tools are
	// imported.
	if _, err := h.ShortRuns(ctx, 1, 1); err != nil {
		return err
	}
	tp, err := h.ShortRuns(ctx, o.shortRuns, o.submit)
	if err != nil {
		return err
	}
	counts := fmt.Sprintf("stmts_per_run=%.1f writes_per_run=%.1f tx_per_run=%.1f pool_per_run=%.1f",
		tp.PerRun, tp.WritesPerRun, tp.TxPerRun, tp.PoolPerRun)
	if !h.Counted() {
		counts = notCounted
	}
	fmt.Fprintf(stdout, "short backend=%s transport=%s %s workers=%d runs=%d submitters=%d elapsed_s=%.2f runs_per_s=%.1f %s\n",
		backend, o.transport, modeField(o), o.workers, tp.Runs, o.submit, tp.Elapsed.Seconds(), tp.PerSecond, counts)
	return cleanup()
}

// harness starts a harness on a fresh database; cleanup closes it and
// drops the database (a second call does nothing).
func harness(ctx context.Context, o options, backend, dir string, workers int, logger *slog.Logger) (*loadtest.Harness, func() error, error) {
	db := filepath.Join(dir, "andon-"+tag()+".db")
	drop := func() error { return nil }
	if backend == "postgres" {
		var err error
		if db, drop, err = schema(ctx, o.db); err != nil {
			return nil, nil, err
		}
	}
	h, err := loadtest.Start(ctx, loadtest.Config{DB: db, Dir: dir, Transport: o.transport, Workers: workers, Logger: logger,
		Processes: o.processes, Andon: o.andon})
	if err != nil {
		return nil, nil, errors.Join(err, drop())
	}
	done := false
	return h, func() error {
		if done {
			return nil
		}
		done = true
		return errors.Join(h.Close(), drop())
	}, nil
}

// schema creates a schema of its own on the database dsn names and
// returns a DSN that uses it, and how to drop it.
func schema(ctx context.Context, dsn string) (string, func() error, error) {
	name := "load_" + tag()
	u, err := url.Parse(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("-db: %w", err)
	}
	// One connection, not the store's pool: pgxpool's own settings
	// (pool_max_conns=N and the like) would reach the server as runtime
	// parameters, which it refuses.
	admin := *u
	q := admin.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	admin.RawQuery = q.Encode()
	exec := func(ctx context.Context, stmt string) error {
		conn, err := pgx.Connect(ctx, admin.String())
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, stmt)
		return errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
	}
	if err := exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, fmt.Errorf("creating schema %s: %w", name, err)
	}
	q = u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return exec(ctx, "DROP SCHEMA "+name+" CASCADE")
	}, nil
}

func tag() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// notCounted stands where statement counts would be, across processes:
// the statements are other processes', which the harness cannot count
// (a zero would read as "none sent").
const notCounted = "stmts=not_counted_across_processes"

// modeField names how andon ran.
func modeField(o options) string {
	if o.processes > 0 {
		return fmt.Sprintf("mode=processes processes=%d", o.processes)
	}
	return "mode=in-process"
}

// statements are a storm's statement counts, where countable.
func statements(res *loadtest.Result) string {
	if !res.Counted {
		return notCounted
	}
	return fmt.Sprintf("stmts_per_cancel=%.1f writes_per_cancel=%.1f pool_per_cancel=%.1f", res.PerCancel, res.WritesPerCancel, res.PoolPerCancel)
}

// idleStatements is the store's statements per second at rest, where
// countable.
func idleStatements(res *loadtest.Result) string {
	if !res.Counted {
		return "idle_stmts_per_s=not_counted"
	}
	return fmt.Sprintf("idle_stmts_per_s=%.1f", res.IdleStatementsPerSecond)
}

// memory is the memory per run in flight: this process's live heap and
// stacks in process; across processes the workers' heap (garbage
// included: nobody collected it first), stacks and resident memory.
func memory(res *loadtest.Result) string {
	if !res.Counted {
		return fmt.Sprintf("heap_uncollected_per_run_B=%.0f stack_per_run_B=%.0f rss_per_run_B=%.0f", res.HeapPerRun, res.StackPerRun, res.RSSPerRun)
	}
	return fmt.Sprintf("heap_per_run_B=%.0f stack_per_run_B=%.0f", res.HeapPerRun, res.StackPerRun)
}

// writeProfile writes the runtime profile called name to the file at path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup(name).WriteTo(f, 0), f.Close())
}

// recordTo starts a recording (the CPU profile, the execution trace) into
// the file at path; the function returned stops it and closes the file.
func recordTo(path string, start func(io.Writer) error, stop func()) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		stop()
		return f.Close()
	}, nil
}

// profiles starts the profiles o asks for; the function returned writes
// them.
func profiles(o options) (func() error, error) {
	var stops []func() error
	if o.cpuProfile != "" {
		stop, err := recordTo(o.cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
	}
	if o.blockProfile != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		stops = append(stops, func() error {
			runtime.SetBlockProfileRate(0)
			return writeProfile("block", o.blockProfile)
		})
	}
	if o.mutexProfile != "" {
		runtime.SetMutexProfileFraction(1)
		stops = append(stops, func() error {
			runtime.SetMutexProfileFraction(0)
			return writeProfile("mutex", o.mutexProfile)
		})
	}
	if o.trace != "" {
		stop, err := recordTo(o.trace, trace.Start, trace.Stop)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
	}
	return func() error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop())
		}
		stops = nil
		return errors.Join(errs...)
	}, nil
}
