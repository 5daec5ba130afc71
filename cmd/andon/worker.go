package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/sqlstore"
)

// notifyTimeout bounds the NOTIFY and the job cancel that tell other
// processes of a cancel.
const notifyTimeout = 5 * time.Second

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
	if oaf.baseURL == "" && (oaf.model != "" || oaf.credential != "") {
		return fs.usageError("--openai-model and --openai-credential need --openai-base-url")
	}
	logger := newLogger(e, *verbose)
	cfg, err := catalogue.Load(*configPath)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	a, err := assemble(ctx, e, sf, cfg, oaf, rf, logger)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer a.close()
	st, rt := a.st, a.rt
	stopMetrics, err := serveMetrics(e, *metricsAddr, a.metrics, logger)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer stopMetrics()
	fmt.Fprintf(e.stderr, "andon: worker executing up to %d runs at once (database %s, config %s); Ctrl-C stops\n",
		rf.workers, sf.where(), *configPath)
	if err := st.execute(ctx, rt, rf, logger); err != nil {
		e.errorf("executing runs: %v", err)
		return exitFailure
	}
	fmt.Fprintln(e.stderr, "andon: stopped")
	return exitOK
}

// assembled is what serve and worker build before they start: the store
// with its vault and audit log, the catalogue of tools, and the runtime.
type assembled struct {
	st       *stores
	auditLog *audit.Log
	cat      *catalogue.Catalogue
	rt       *agent.Runtime
	metrics  *metrics.Metrics // fed by the catalogue, its clients and the watcher
}

// assemble opens the store and builds the catalogue and runtime on it. Close
// the result when done.
func assemble(ctx context.Context, e *env, sf *storeFlags, cfg *catalogue.Config, oaf *openaiFlags, rf *runtimeFlags, logger *slog.Logger) (_ *assembled, err error) {
	st, err := sf.open(ctx, e)
	if err != nil {
		return nil, errors.New(sf.explain(err))
	}
	a := &assembled{st: st, metrics: metrics.New(logger)}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	if a.auditLog, err = st.auditLog(ctx); err != nil {
		return nil, errors.New(sf.explain(err))
	}
	if a.cat, err = catalogue.New(cfg, &catalogue.Options{
		Dial:     egressDial(egress.Config{Audit: a.auditLog, Secrets: st.vault, Logger: logger}),
		Logger:   logger,
		Settings: st.store, // operators' tool settings, applied by every process
		Client:   &mcp.ClientOptions{OnCancelSent: a.metrics.CancelSent},
		OnCall:   a.metrics.ToolCall,
		OnImport: a.metrics.ServerImport,
	}); err != nil {
		return nil, err
	}
	models, err := newModels(ctx, oaf, st.vault, a.auditLog, logger)
	if err != nil {
		return nil, err
	}
	rcfg := rf.config(st, a.cat, models, logger)
	rcfg.Audit = a.auditLog // every decision on a tool call is an audit row
	if a.rt, err = agent.New(rcfg); err != nil {
		return nil, err
	}
	if err = a.metrics.CountWatcherReads(a.rt.Watcher()); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *assembled) close() {
	if a.rt != nil {
		a.rt.Close()
	}
	if a.cat != nil {
		a.cat.Close()
	}
	a.st.close()
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
}

func addRuntimeFlags(fs *flagSet, workersUsage string) *runtimeFlags {
	f := &runtimeFlags{}
	fs.DurationVar(&f.watch, "watch-interval", agent.DefaultWatchInterval, "how often the watcher polls for runs cancelled elsewhere (the backstop)")
	fs.IntVar(&f.workers, "workers", agent.DefaultMaxConcurrentRuns, workersUsage)
	fs.DurationVar(&f.lease, "lease", agent.DefaultLeaseDuration, "how long a run's claim holds without renewal (renewed at every step and during long calls); a run whose worker died is taken back once it lapses")
	fs.DurationVar(&f.reap, "reap-interval", agent.DefaultReapInterval, "how often to look for runs whose worker died (lease lapsed): dead-lettered if found mid non-idempotent write, else requeued")
	fs.BoolVar(&f.notify, "notify", true, "on PostgreSQL, tell other andon processes of a cancel at once (NOTIFY) and listen for theirs (LISTEN); "+
		"false leaves cancels made elsewhere to the watcher's poll")
	return f
}

// config is the runtime's configuration from the flags. Runs are River
// jobs (sqlstore.QueueOptions); River may take a job's worker for dead only
// well after the longest run could have ended, since the run's lease is
// what notices a dead worker first.
func (rf *runtimeFlags) config(st *stores, tools agent.Tools, models *models, logger *slog.Logger) agent.Config {
	cfg := agent.Config{
		Store:             st.store,
		Tools:             tools,
		NewModel:          models.newModel,
		WatchInterval:     rf.watch,
		MaxConcurrentRuns: rf.workers,
		LeaseDuration:     rf.lease,
		ReapInterval:      rf.reap,
		// A process that executes nothing hands approved runs to the workers.
		ResumeElsewhere: rf.workers == 0,
		OnCancel:        st.announceCancel(rf, logger),
		Logger:          logger,
	}
	if rf.workers > 0 {
		cfg.Queue = st.store.Queue(sqlstore.QueueOptions{
			RescueAfter: agent.DefaultMaxRunTime + 2*rf.lease,
			Logger:      quieter(logger, slog.LevelWarn),
		})
	}
	return cfg
}

// bus returns the store's cancel bus, if it has one (PostgreSQL's
// LISTEN/NOTIFY) and rf lets it be used. Without one, the worker holding a
// cancelled run hears of it from River (the run's job is cancelled with
// it), and the watcher's poll is the backstop.
func (s *stores) bus(rf *runtimeFlags) (sqlstore.Notifier, bool) {
	b, ok := s.store.Notifier()
	return b, ok && rf.notify
}

// announceCancel returns the runtime's OnCancel hook: it tells the other
// processes on the database of every run this one cancels — first by the
// store's bus (NOTIFY), if there is one and rf lets it be used, then by
// cancelling the run's River job, which reaches the worker holding it on
// either backend. A failed announcement is logged; the others' polls still
// see the cancel.
func (s *stores) announceCancel(rf *runtimeFlags, logger *slog.Logger) func(ctx context.Context, runID string) {
	b, notify := s.bus(rf)
	return func(ctx context.Context, runID string) {
		ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
		defer cancel()
		if notify {
			if err := b.NotifyCancelled(ctx, runID); err != nil {
				logger.Warn("andon: telling other processes of a cancel failed; their watchers' poll will see it", "run", runID, "error", err)
			}
		}
		if err := s.store.CancelRunJob(ctx, runID); err != nil {
			logger.Warn("andon: cancelling a run's job failed; the worker's poll will see the cancel", "run", runID, "error", err)
		}
	}
}

// execute runs rt until ctx ends: its River workers, watcher and reaper — or, with
// --workers 0, only its watcher — and, when the store has a bus, a listener
// that hands every cancel announced by any process to rt's watcher as a
// hint (the watcher reads the row before it cancels anything). It
// returns once all of them have stopped.
func (s *stores) execute(ctx context.Context, rt *agent.Runtime, rf *runtimeFlags, logger *slog.Logger) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	if b, ok := s.bus(rf); ok {
		wg.Go(func() {
			_ = b.ListenCancelled(ctx, rt.Watcher().Hint,
				sqlstore.ListenLogger(logger),
				sqlstore.ListenOnListening(func() {
					logger.Info("andon: listening for cancels from other processes (PostgreSQL LISTEN)")
					// A cancel announced while the listener was away
					// was missed: look now, not at the next poll.
					rt.Watcher().Poll(ctx)
				}))
		})
	}
	if rf.workers == 0 {
		// API only: claim nothing, and hand approved runs back to the
		// queue (Config.ResumeElsewhere). Nothing executes here; the
		// watcher still polls, which costs nothing while nothing is
		// watched.
		rt.Watcher().Run(ctx)
		return nil
	}
	return rt.Run(ctx)
}
