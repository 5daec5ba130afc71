package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/model"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for [Config].
const (
	DefaultLeaseDuration = time.Minute
	DefaultMaxRounds     = 20
	// DefaultMaxCallsPerTurn bounds the tool calls one model turn may ask
	// for. Parallel tool calls are a handful in practice; a turn that asks
	// for more than this is a model gone wrong (or steered), and each call
	// is work on a server, perhaps a write.
	DefaultMaxCallsPerTurn = 32
	// DefaultMaxCallsPerRun bounds the tool calls of a whole run: a little
	// more than a full turn in every round of DefaultMaxRounds would need,
	// were each turn to ask for a dozen.
	DefaultMaxCallsPerRun = 256
	DefaultMaxRunTime     = 30 * time.Minute
	// DefaultMaxConcurrentRuns is measured, not guessed: a run mostly
	// waits (for its model, for its tools), so a process can hold many. On
	// 2 shared cores (docs/benchmarks.md, "Runs per second"), one-tool-call
	// runs/s rose from 4 to 16 concurrent runs on both backends, held to
	// 64, then fell on SQLite (its one writer) and rose only slowly on
	// PostgreSQL; 64 runs in flight cost about 2 MiB.
	DefaultMaxConcurrentRuns = 64
	DefaultClaimInterval     = 250 * time.Millisecond
	DefaultReapInterval      = 30 * time.Second
	DefaultMaxAttempts       = 3
)

// Config configures a [Runtime]. Store, Tools and NewModel are required;
// every other field says what its zero value means.
type Config struct {
	// Store keeps the runs. It is the one definition of a run's state.
	Store Store
	// Tools are what runs may call.
	Tools Tools
	// NewModel returns the model for a run's request.
	NewModel func(ctx context.Context, req *Request) (model.Model, error)
	// Watcher cancels the calls of cancelled runs. Nil means a watcher
	// polling every WatchInterval, run by [Runtime.Run].
	Watcher *Watcher
	// WatchInterval is the backstop poll of the default watcher. Zero
	// means DefaultWatchInterval.
	WatchInterval time.Duration
	// WorkerID names this process in lease owners. Empty means
	// "host:pid".
	WorkerID string
	// LeaseDuration is how long a segment's claim on a run holds without
	// renewal. Every third of it, one statement renews the leases of all
	// the runtime's segments that were last set more than a sixth of it
	// ago (a write fence sets it too, and a step boundary if half of it
	// has passed); a run whose worker died is reaped once it lapses. Zero
	// means DefaultLeaseDuration.
	LeaseDuration time.Duration
	// MaxRounds bounds the model turns of a run. Zero means DefaultMaxRounds.
	MaxRounds int
	// MaxCallsPerTurn bounds the tool calls one model turn may ask for. A
	// turn that asks for more is recorded, none of its calls is made, and
	// the run fails with ReasonMaxCallsPerTurn. Zero means
	// DefaultMaxCallsPerTurn.
	MaxCallsPerTurn int
	// MaxCallsPerRun bounds the tool calls a run's model may ask for in
	// all: a turn that would take the run past it is recorded, none of its
	// calls is made, and the run fails with ReasonMaxCallsPerRun. Calls an
	// operator denied count too: the model asked for them. Zero means
	// DefaultMaxCallsPerRun.
	MaxCallsPerRun int
	// MaxRunTime bounds a run from its first start. Zero means
	// DefaultMaxRunTime.
	MaxRunTime time.Duration
	// MaxConcurrentRuns bounds the runs [Runtime.Run] executes at once.
	// Zero means DefaultMaxConcurrentRuns.
	MaxConcurrentRuns int
	// ClaimInterval is how often Run looks for queued runs when nothing
	// wakes it. Zero means DefaultClaimInterval.
	ClaimInterval time.Duration
	// ReapInterval is how often Run looks for runs whose lease expired.
	// Zero means DefaultReapInterval.
	ReapInterval time.Duration
	// MaxAttempts bounds how often a run is claimed (retries after a lost
	// worker). Zero means DefaultMaxAttempts.
	MaxAttempts int
	// Queue hands queued runs to Run. Nil means Run claims them from the
	// Store itself, the oldest first, looking every ClaimInterval and when
	// woken ([Runtime.Wake]). With a Queue, Approve and Deny hand the run
	// back to the queue too, as ResumeElsewhere does.
	Queue Queue
	// ResumeElsewhere makes Approve and Deny hand the run back to the queue,
	// for any worker to go on with, instead of executing it in this
	// process: for a process that serves the API and executes nothing.
	ResumeElsewhere bool
	// Audit, if set, records every decision on a tool call (approved,
	// denied, an admin's override of four eyes, a refused approval) as an
	// audit row naming the run, who, and the call. A decision that cannot
	// be audited is not made. Nil: decisions are only logged.
	Audit Auditor
	// OnCancel, if set, is told of every run this runtime cancels, after
	// the store recorded it and this process's watcher was told: a hook to
	// tell other processes (PostgreSQL NOTIFY, the run's job). announced
	// is true if the store's cancel statement told them already (a
	// [RunCanceller] asked to announce: PostgreSQL's NOTIFY in the
	// cancel's own transaction); it is asked to for a run with no call in
	// flight in this process. Its ctx carries the canceller's values but
	// not its cancellation.
	OnCancel func(ctx context.Context, runID string, announced bool)
	// Inputs, if set, keeps the questions servers ask operators during
	// runs (see [Ask]); the console and "andon answer" reply to them. Nil:
	// no tool call can ask an operator, and Reply refuses.
	Inputs InputStore
	// InputPollInterval is how often a segment waiting for an answer reads
	// its question, when no reply made in this process wakes it. Zero
	// means DefaultInputPollInterval.
	InputPollInterval time.Duration
	// Logger receives the runtime's diagnostics. Nil means discard them.
	Logger *slog.Logger

	// TracerProvider, if set, gives every segment of a run a span
	// ("invoke_agent"), with a child per model turn ("chat") and per tool
	// call ("execute_tool NAME", the parent of its MCP request's span),
	// and every cancel a span ("cancel run") whose events say when it was
	// asked for, when the row was written and when this process's calls
	// were signalled. Nil means no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Runtime executes agent runs: it claims queued runs, drives each through
// its model and tools, records every step, and stops a cancelled run within
// a bounded time — the in-flight call included.
type Runtime struct {
	cfg        Config
	watcher    *Watcher
	ownWatcher bool
	leases     *renewer // renews every segment's lease (renewer.go)
	logger     *slog.Logger
	segment    atomic.Int64 // numbers lease owners
	wake       chan struct{}
	wg         sync.WaitGroup // resumed segments started by Approve or Deny
	baseCtx    context.Context
	stop       context.CancelFunc
	// tasks and taskTools, if the Store and the Tools offer them, keep and
	// reach the MCP tasks that calls become (task_cancel.go).
	tasks     TaskStore
	taskTools TaskTools
	waiters   waiters      // segments waiting for an operator's answer
	homes     homes        // direct calls whose callers wait here (direct.go)
	tracer    trace.Tracer // nil when not tracing (trace.go)
}

// New returns a runtime, or an error if cfg is incomplete.
func New(cfg Config) (*Runtime, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("agent: Config.Store is required")
	case cfg.Tools == nil:
		return nil, errors.New("agent: Config.Tools is required")
	case cfg.NewModel == nil:
		return nil, errors.New("agent: Config.NewModel is required")
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = host + ":" + strconv.Itoa(os.Getpid())
	}
	cfg.LeaseDuration = cmpOr(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.MaxRunTime = cmpOr(cfg.MaxRunTime, DefaultMaxRunTime)
	cfg.ClaimInterval = cmpOr(cfg.ClaimInterval, DefaultClaimInterval)
	cfg.ReapInterval = cmpOr(cfg.ReapInterval, DefaultReapInterval)
	cfg.MaxRounds = cmpOr(cfg.MaxRounds, DefaultMaxRounds)
	cfg.MaxCallsPerTurn = cmpOr(cfg.MaxCallsPerTurn, DefaultMaxCallsPerTurn)
	cfg.MaxCallsPerRun = cmpOr(cfg.MaxCallsPerRun, DefaultMaxCallsPerRun)
	cfg.MaxConcurrentRuns = cmpOr(cfg.MaxConcurrentRuns, DefaultMaxConcurrentRuns)
	cfg.MaxAttempts = cmpOr(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.InputPollInterval = cmpOr(cfg.InputPollInterval, DefaultInputPollInterval)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rt := &Runtime{cfg: cfg, watcher: cfg.Watcher, logger: cfg.Logger, wake: make(chan struct{}, 1)}
	if rt.logger == nil {
		rt.logger = slog.New(slog.DiscardHandler)
	}
	if rt.watcher == nil {
		rt.watcher = NewWatcher(cfg.Store, cfg.WatchInterval, rt.logger)
		rt.ownWatcher = true
	}
	if cfg.TracerProvider != nil {
		rt.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	rt.leases = newRenewer(cfg.Store, cfg.LeaseDuration, cfg.Now, rt.logger)
	rt.tasks, _ = cfg.Store.(TaskStore)
	rt.taskTools, _ = cfg.Tools.(TaskTools)
	rt.baseCtx, rt.stop = context.WithCancel(context.Background())
	return rt, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Watcher returns the runtime's watcher.
func (rt *Runtime) Watcher() *Watcher { return rt.watcher }

// Actor is who asks for something: the owner of a run, or an admin.
type Actor struct {
	ID    string
	Admin bool
}

func (a Actor) mayAct(run *Run) bool { return a.Admin || (a.ID != "" && a.ID == run.Owner) }

// Submit queues a new run for owner. A request nested deeper than
// MaxJSONDepth, or larger than MaxRequestBytes, is refused with a
// [*LimitError] (ErrLimit) before anything is stored.
func (rt *Runtime) Submit(ctx context.Context, owner string, req *Request) (*Run, error) {
	if req.Prompt == "" {
		return nil, errors.New("agent: a run needs a prompt")
	}
	raw, err := requestJSON(req)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: newRunID(), Owner: owner, Request: raw, Status: StatusQueued, CreatedAt: rt.cfg.Now()}
	ctx, span := rt.startSpan(ctx, "submit run", trace.SpanKindProducer, attrRunID.String(run.ID))
	if span != nil {
		defer span.End()
		run.Trace = TraceParent(ctx)
	}
	if err := rt.cfg.Store.RunInsert(ctx, run); err != nil {
		return nil, fmt.Errorf("agent: storing the run: %w", err)
	}
	rt.Wake()
	return run, nil
}

// Wake makes Run look for queued runs now rather than at its next claim
// interval: for a run queued by another process. The runtime wakes itself
// for the runs it queues. (With a Queue, the engine hands out runs; Wake
// does nothing.)
func (rt *Runtime) Wake() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// newRunID returns a random run id.
func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "run_" + hex.EncodeToString(b)
}

// Cancel cancels a run on behalf of actor, who must own it or be an admin.
// The run's row moves to cancelled in one guarded statement (of two
// concurrent cancels, one wins; a finished run is refused with ErrFinished),
// its resumable state is dropped and its write fence is kept; then every
// call it has in flight in this process is cancelled at once, and other
// processes learn of it through OnCancel or their watcher's poll.
func (rt *Runtime) Cancel(ctx context.Context, actor Actor, runID string) error {
	_, err := rt.CancelRun(ctx, actor, runID)
	return err
}

// CancelRun is Cancel, and reports what became of the run's MCP tasks: a
// task whose call a live worker holds is cancelled by that worker's MCP
// client; one that no live worker holds (its worker died), this process
// cancels with tasks/cancel and the persisted id, and reports what the
// server said.
//
// With a Store that is a [RunCanceller], a run without tasks is cancelled
// in one statement that also authorises it (and, on PostgreSQL, announces
// it): nothing is read before the row says cancelled, and nothing after.
// Only a cancel that this statement does not win reads the run, to say
// why (ErrNotFound, ErrForbidden, ErrFinished) or, for a run with tasks,
// to cancel them as below.
func (rt *Runtime) CancelRun(ctx context.Context, actor Actor, runID string) (_ *CancelReport, err error) {
	start, spanStart := rt.cfg.Now(), time.Now()
	ctx, span := rt.startCancelSpan(ctx, runID)
	defer func() { endCancelSpan(span, err) }()
	if c, ok := rt.cfg.Store.(RunCanceller); ok {
		won, err := rt.cancelRunWith(ctx, runID, span, func(ctx context.Context, announce bool) (Actor, bool, bool, error) {
			won, announced, err := c.RunCancel(ctx, runID, actor, announce)
			return actor, won, announced, err
		})
		if err != nil {
			return nil, err
		}
		if won {
			return &CancelReport{}, nil // no task: the guard said so
		}
	}
	// Counted as in CancelRunWith.
	end := rt.watcher.beginCancel()
	defer end()
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return nil, err
	}
	if !actor.mayAct(run) {
		return nil, fmt.Errorf("%w: %s may not cancel run %s", ErrForbidden, actor.ID, runID)
	}
	won, err := rt.cfg.Store.RunFinish(ctx, runID, "", StatusCancelled, ReasonCancelled, "")
	if err != nil {
		return nil, fmt.Errorf("agent: cancelling run %s: %w", runID, err)
	}
	rowWritten(span, actor, won, spanStart)
	if !won {
		return nil, fmt.Errorf("%w: run %s", ErrFinished, runID)
	}
	rt.cancelled(ctx, actor, runID, false)
	end() // not while its tasks are cancelled: they have signals of their own
	return rt.cancelTasksOf(ctx, run, actor, start), nil
}

// announces reports whether a cancel of runID is to be announced to other
// processes: there is a hook to tell them (OnCancel), and no call of the
// run is in flight here — then no other process has one either, and the
// run's job ends with its segment.
func (rt *Runtime) announces(runID string) bool {
	return rt.cfg.OnCancel != nil && !rt.watcher.Watches(runID)
}

// cancelled does what follows a cancel that won: this process's calls of
// the run are cancelled, and OnCancel is told.
func (rt *Runtime) cancelled(ctx context.Context, actor Actor, runID string, announced bool) {
	// No read needed: the guarded update just made the row say
	// cancelled, for good (cancelled is terminal). The calls first, the
	// log after: a storm's hundred log lines must not hold up a stop.
	if rt.tracer == nil {
		rt.watcher.cancel(runID)
	} else {
		rt.signalled(ctx, rt.watcher.cancelFrom(runID, trace.SpanContextFromContext(ctx), "in process"))
	}
	rt.logger.Info("agent: run cancelled", "run", runID, "by", actor.ID)
	if rt.cfg.OnCancel != nil {
		// Not the caller's cancellation: a client that stops waiting for
		// its answer does not stop the others from being told.
		rt.cfg.OnCancel(context.WithoutCancel(ctx), runID, announced)
	}
}

func (rt *Runtime) newOwner(kind string) string {
	return kind + ":" + rt.cfg.WorkerID + ":" + strconv.FormatInt(rt.segment.Add(1), 10)
}

// Run claims queued runs — or takes them from the Queue — and executes
// them, up to MaxConcurrentRuns at a time, until ctx ends; it also runs the
// watcher's poll and the reaper. It returns an error only if the Queue
// fails.
// When ctx ends, the runs in flight are interrupted (their leases lapse and
// the reaper of a later process decides whether they may be retried), and
// Run returns once they have stopped.
func (rt *Runtime) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if rt.ownWatcher {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt.watcher.Run(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rt.reapLoop(ctx)
	}()
	defer func() {
		cancel()  // the watcher and the reaper, if the queue failed
		rt.stop() // resumed segments too
		wg.Wait()
		rt.wg.Wait()
		rt.leases.wait() // no segment is left: its goroutine exits
	}()
	if rt.cfg.Queue != nil {
		return rt.workQueue(ctx)
	}
	slots := make(chan struct{}, rt.cfg.MaxConcurrentRuns)
	idle := time.NewTicker(rt.cfg.ClaimInterval)
	defer idle.Stop()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		owner := rt.newOwner("worker")
		run, err := rt.cfg.Store.RunClaim(ctx, owner, rt.cfg.Now().Add(rt.cfg.LeaseDuration))
		if err != nil && ctx.Err() == nil {
			rt.logger.Warn("agent: claiming a run failed", "error", err)
		}
		if run == nil {
			<-slots
			select {
			case <-ctx.Done():
				return nil
			case <-rt.wake:
			case <-idle.C:
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			rt.execute(ctx, run, owner, begun{claimed: true})
		}()
	}
}

// Close stops segments that Approve or Deny started outside Run and waits
// for them.
func (rt *Runtime) Close() {
	rt.stop()
	rt.wg.Wait()
}

// reapLoop periodically hands runs whose lease lapsed (their worker died)
// back to the queue — unless they were found mid non-idempotent write, or
// out of attempts, in which case they are dead-lettered.
func (rt *Runtime) reapLoop(ctx context.Context) { every(ctx, rt.cfg.ReapInterval, rt.Reap) }

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// Reap handles every run whose lease has lapsed: a run found mid
// non-idempotent write is failed (not_retryable) and never retried, a run
// out of attempts is failed, and any other goes back to the queue.
func (rt *Runtime) Reap(ctx context.Context) {
	now := rt.cfg.Now()
	stale, err := rt.cfg.Store.RunsStale(ctx, now)
	if err != nil {
		rt.logger.Warn("agent: listing stale runs failed", "error", err)
		return
	}
	for _, run := range stale {
		rt.reap(ctx, run, now)
	}
	rt.ReapTasks(ctx)
}

// reap handles one run whose lease lapsed before now, as Reap describes.
func (rt *Runtime) reap(ctx context.Context, run *Run, now time.Time) {
	if rt.reapMidTask(ctx, run, now) {
		return
	}
	var ok bool
	var err error
	switch {
	case !MayRetry(run.PendingEffect):
		ok, err = rt.cfg.Store.RunFinishStale(ctx, run.ID, now, StatusFailed, ReasonNotRetryable, "interrupted during a non-idempotent write; not retried")
	case run.Home != "":
		// A direct call's caller waited in the process that went away:
		// nobody is left to hand the result to, and only that process
		// may execute it.
		ok, err = rt.cfg.Store.RunFinishStale(ctx, run.ID, now, StatusFailed, ReasonFailed, "the process that held this direct call went away")
	case run.Attempts >= rt.cfg.MaxAttempts:
		ok, err = rt.cfg.Store.RunFinishStale(ctx, run.ID, now, StatusFailed, ReasonFailed, "out of attempts")
	default:
		ok, err = rt.cfg.Store.RunRequeueStale(ctx, run.ID, now)
		if ok {
			rt.Wake()
		}
	}
	if err != nil {
		rt.logger.Warn("agent: reaping a run failed", "run", run.ID, "error", err)
	} else if ok {
		rt.logger.Info("agent: reaped a run whose worker went away", "run", run.ID, "pending_effect", string(run.PendingEffect))
	}
}
