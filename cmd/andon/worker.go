package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/tracing"
)

func runWorker(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "worker", "andon worker [flags]",
		"Execute runs: work the queued runs' River jobs on the database and run\n"+
			"them, as andon serve does, without the API. Any number of workers may\n"+
			"share one database — on PostgreSQL, on any number of machines; runs are\n"+
			"started, listed and cancelled through an andon serve on the same\n"+
			"database. A cancel made by another process reaches this worker's calls\n"+
			"in flight at once (PostgreSQL LISTEN/NOTIFY, and River cancelling the\n"+
			"run's job); the watcher's poll is the backstop. Every process must use\n"+
			"the same master key.")
	sf := addStoreFlags(fs)
	configPath := fs.String("config", "andon.yaml", "the MCP servers config `file`")
	rf := addRuntimeFlags(fs, "execute at most `N` runs at once")
	verbose := fs.Bool("v", false, "log debug detail")
	oaf := addOpenAIFlags(fs)
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics on GET /metrics at this loopback `address`; empty: none")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if err := checkMetricsAddr(*metricsAddr); err != nil {
		return fs.usageError("%v", err)
	}
	if rf.workers < 1 {
		return fs.usageError("--workers %d: a worker executes at least one run at a time", rf.workers)
	}
	if err := rf.check(); err != nil {
		return fs.usageError("%v", err)
	}
	if oaf.baseURL == "" && (oaf.model != "" || oaf.credential != "") {
		return fs.usageError("--openai-model and --openai-credential need --openai-base-url")
	}
	logger := newLogger(e, *verbose)
	cfg, err := loadConfig(*configPath)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	cfg.LogWarnings(logger, *configPath)
	n, st, err := assemble(ctx, e, sf, cfg, oaf, rf, logger, nil)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer st.close()
	defer n.Close()
	stopMetrics, err := serveMetrics(e, *metricsAddr, n.Metrics(), logger)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer stopMetrics()
	fmt.Fprintf(e.stderr, "andon: worker executing up to %d runs at once (database %s, config %s); Ctrl-C stops\n",
		rf.workers, sf.where(), *configPath)
	if err := n.Run(ctx); ctx.Err() == nil {
		e.errorf("%v", err)
		return exitFailure
	}
	fmt.Fprintln(e.stderr, "andon: stopped")
	return exitOK
}

// assemble opens the store and builds the node on it, its API answering
// to the loopback names and hosts. Close the node, then the store, when
// done.
func assemble(ctx context.Context, e *env, sf *storeFlags, cfg *fileConfig, oaf *openaiFlags, rf *runtimeFlags, logger *slog.Logger,
	hosts []string) (*node.Node, *stores, error) {
	st, err := sf.open(ctx, e)
	if err != nil {
		return nil, nil, errors.New(sf.explain(err))
	}
	if st.tracing, err = tracing.FromEnv(ctx, "andon"); err != nil {
		st.close()
		return nil, nil, err
	}
	ncfg := &node.Config{Store: st.store, Key: st.key, Servers: &cfg.Config, Logger: logger, AllowedHosts: hosts,
		TracerProvider: st.tracing.Provider()}
	if st.tracing.Enabled() {
		logger.Info("andon: exporting traces over OTLP/HTTP (OTEL_EXPORTER_OTLP_*)")
	}
	rf.apply(ncfg, cfg.Runs)
	if oaf.baseURL != "" {
		ncfg.OpenAI = &node.OpenAI{BaseURL: oaf.baseURL, Model: oaf.model, Credential: oaf.credential}
	}
	n, err := node.New(ctx, ncfg)
	if err != nil {
		st.close()
		return nil, nil, errors.New(sf.explain(err))
	}
	return n, st, nil
}

func newLogger(e *env, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// runtimeFlags are the flags of the commands that execute runs: serve and
// worker.
type runtimeFlags struct {
	watch   time.Duration
	workers int
	notify  bool
	lease   time.Duration
	reap    time.Duration
	limits  runLimits // the flags' limits; zero: andon.yaml's
}

func addRuntimeFlags(fs *flagSet, workersUsage string) *runtimeFlags {
	f := &runtimeFlags{}
	fs.DurationVar(&f.watch, "watch-interval", agent.DefaultWatchInterval, "how often the watcher polls for runs cancelled elsewhere (the backstop)")
	fs.IntVar(&f.workers, "workers", agent.DefaultMaxConcurrentRuns, workersUsage)
	fs.DurationVar(&f.lease, "lease", agent.DefaultLeaseDuration, "how long a run's claim holds without renewal (renewed at every step and during long calls); a run whose worker died is taken back once it lapses")
	fs.DurationVar(&f.reap, "reap-interval", agent.DefaultReapInterval, "how often to look for runs whose worker died (lease lapsed): dead-lettered if found mid non-idempotent write, else requeued")
	fs.BoolVar(&f.notify, "notify", true, "on PostgreSQL, tell other andon processes of a cancel at once (NOTIFY) and listen for theirs (LISTEN); "+
		"false leaves cancels made elsewhere to the watcher's poll")
	fs.IntVar(&f.limits.MaxRounds, "max-rounds", 0, limitUsage("model turns per run", "max_rounds", agent.DefaultMaxRounds))
	fs.IntVar(&f.limits.MaxCallsPerTurn, "max-calls-per-turn", 0, limitUsage("tool calls one model turn may ask for (a turn asking for more makes none and fails its run)", "max_calls_per_turn", agent.DefaultMaxCallsPerTurn))
	fs.IntVar(&f.limits.MaxCallsPerRun, "max-calls-per-run", 0, limitUsage("tool calls per run (the turn that would go past it makes none and fails its run)", "max_calls_per_run", agent.DefaultMaxCallsPerRun))
	return f
}

// check refuses limits below zero.
func (rf *runtimeFlags) check() error {
	if rf.limits.MaxRounds < 0 || rf.limits.MaxCallsPerTurn < 0 || rf.limits.MaxCallsPerRun < 0 {
		return errors.New("--max-rounds, --max-calls-per-turn and --max-calls-per-run want 1 or more (0: andon.yaml's, else the default)")
	}
	return nil
}

// apply sets the runtime's part of cfg from the flags, over andon.yaml's
// limits: --workers 0 makes a node that serves the API and executes
// nothing.
func (rf *runtimeFlags) apply(cfg *node.Config, file runLimits) {
	cfg.Workers, cfg.APIOnly = rf.workers, rf.workers == 0
	l := file.over(rf.limits)
	cfg.MaxRounds, cfg.MaxCallsPerTurn, cfg.MaxCallsPerRun = l.MaxRounds, l.MaxCallsPerTurn, l.MaxCallsPerRun
	cfg.WatchInterval, cfg.LeaseDuration, cfg.ReapInterval = rf.watch, rf.lease, rf.reap
	cfg.NoNotify = !rf.notify
}
