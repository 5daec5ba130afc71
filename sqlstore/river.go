package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/andonhq/andon/agent"
)

// River is the job engine on both backends (riversqlite, riverpgxv5): a
// queued run is a River job, inserted in the same transaction as the row
// that queues it — a new run, a requeue after an approval, a requeue of a
// run whose worker died. Once a run is cancelled, CancelRunJob cancels its
// job, which tells the worker holding it.
// The job carries only the run's id. River decides which worker looks at
// which run, when, and again after an error or a vanished worker; the run
// row decides what that worker does (agent.Runtime.Work).

// runJob is the River job of a queued run.
type runJob struct {
	RunID string `json:"run_id"`
}

// Kind implements river.JobArgs.
func (runJob) Kind() string { return "andon_run" }

// jobMaxAttempts bounds how often River hands out one job after its work
// returned an error (the store was unreachable). A run's own attempts are
// counted on its row; this only keeps a job from retrying forever.
const jobMaxAttempts = 10

// DefaultRescueAfter is how long a run's job may be running before River
// takes its worker for dead and hands the job out again, when QueueOptions
// does not say. It must exceed the longest run: River's rescue is
// time-based, so the run's lease — renewed at every step — is what notices
// a dead worker first, and a rescued job only finds its run reaped or
// finished.
const DefaultRescueAfter = time.Hour

// QueueOptions configure a store's River workers. The zero value is ready
// to use.
type QueueOptions struct {
	// RescueAfter is how long a job may run before River rescues it; it
	// must exceed agent.Config.MaxRunTime. Zero means DefaultRescueAfter.
	RescueAfter time.Duration
	// Logger receives River's diagnostics. Nil means discard them.
	Logger *slog.Logger
}

// jobs is River on one backend, for the store's own transactions. Its
// client inserts and cancels jobs and is never started; workers start
// their own (work).
type jobs[TTx any] struct {
	driver riverdriver.Driver[TTx]
	client *river.Client[TTx]
}

// fetchCooldown is the least time between two fetches of a worker client,
// and between two insert notifications of a queue from the store's
// inserting client: River notifies the workers of an insert at most once
// per cooldown and queue, and a worker whose slots are free fetches only
// when notified (or at its 1 s poll). With River's default of 100 ms, a
// run inserted after a notification waited for the next one, up to 100 ms,
// however idle the workers were.
const fetchCooldown = 5 * time.Millisecond

func newJobs[TTx any](driver riverdriver.Driver[TTx]) (*jobs[TTx], error) {
	client, err := river.NewClient(driver, &river.Config{Logger: slog.New(slog.DiscardHandler), FetchCooldown: fetchCooldown})
	if err != nil {
		return nil, fmt.Errorf("making the River client: %w", err)
	}
	return &jobs[TTx]{driver: driver, client: client}, nil
}

// migrateTx brings River's tables up to date inside the store's migration
// transaction, under its lock: on SQLite, where River's migrations can
// share one.
func (j *jobs[TTx]) migrateTx(ctx context.Context, tx TTx) error {
	m, err := rivermigrate.New(j.driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("migrating River's tables: %w", err)
	}
	//lint:ignore SA1019 Migrate opens transactions of its own; the store migrates River inside its own (see above), which only MigrateTx can.
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating River's tables: %w", err)
	}
	return nil
}

// migrate brings River's tables up to date, one transaction per River
// migration.
func (j *jobs[TTx]) migrate(ctx context.Context) error {
	m, err := rivermigrate.New(j.driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("migrating River's tables: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating River's tables: %w", err)
	}
	return nil
}

// enqueue inserts the jobs of runs runIDs in tx, in one statement, and
// returns their ids in the same order.
func (j *jobs[TTx]) enqueue(ctx context.Context, tx TTx, runIDs ...string) ([]int64, error) {
	params := make([]river.InsertManyParams, len(runIDs))
	for i, id := range runIDs {
		params[i] = river.InsertManyParams{Args: runJob{RunID: id}, InsertOpts: &river.InsertOpts{MaxAttempts: jobMaxAttempts}}
	}
	res, err := j.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("inserting the jobs of %d runs: %w", len(runIDs), err)
	}
	// Matched by the run each job carries, not by position: River does
	// not promise that its results keep the order of its parameters.
	pos := make(map[string]int, len(runIDs))
	for i, id := range runIDs {
		pos[id] = i
	}
	ids := make([]int64, len(runIDs))
	for _, r := range res {
		var args runJob
		if err := json.Unmarshal(r.Job.EncodedArgs, &args); err != nil {
			return nil, fmt.Errorf("reading the run of job %d: %w", r.Job.ID, err)
		}
		i, ok := pos[args.RunID]
		if !ok || ids[i] != 0 {
			return nil, fmt.Errorf("inserting the jobs of %d runs: job %d is of run %q, not one asked for once", len(runIDs), r.Job.ID, args.RunID)
		}
		ids[i] = r.Job.ID
	}
	if len(res) != len(runIDs) {
		return nil, fmt.Errorf("inserting the jobs of %d runs: River inserted %d", len(runIDs), len(res))
	}
	return ids, nil
}

// cancel cancels job jobID: a job not yet worked never will be, and the
// client working a running one has its context cancelled (PostgreSQL
// NOTIFY, or riversqlite's notification table).
func (j *jobs[TTx]) cancel(ctx context.Context, jobID int64) error {
	if _, err := j.client.JobCancel(ctx, jobID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("cancelling job %d: %w", jobID, err)
	}
	return nil
}

// cancelTx is cancel inside tx: many cancels, one commit.
func (j *jobs[TTx]) cancelTx(ctx context.Context, tx TTx, jobID int64) error {
	if _, err := j.client.JobCancelTx(ctx, tx, jobID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("cancelling job %d: %w", jobID, err)
	}
	return nil
}

// queue is a store's agent.Queue: River workers on its database.
type queue[TTx any] struct {
	jobs *jobs[TTx]
	opts QueueOptions
	// adopt gives a job to every queued run that has none (a run queued
	// before River carried runs), so that none waits forever.
	adopt func(ctx context.Context) error
}

var _ agent.Queue = (*queue[any])(nil)

// Work implements agent.Queue: it starts a River client working run jobs,
// at most limit at once, and stops it when ctx ends. A job's work that
// returns an error is retried by River with backoff.
func (q *queue[TTx]) Work(ctx context.Context, limit int, work func(ctx context.Context, runID string) error) error {
	logger := q.opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rescue := q.opts.RescueAfter
	if rescue <= 0 {
		rescue = DefaultRescueAfter
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &runWorker{work: work}); err != nil {
		return fmt.Errorf("sqlstore: registering the run worker: %w", err)
	}
	client, err := river.NewClient(q.jobs.driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: max(limit, 1)}},
		Workers: workers,
		// A run bounds itself (agent.Config.MaxRunTime); River must not
		// cut it short.
		JobTimeout:           -1,
		RescueStuckJobsAfter: rescue,
		// A queued run starts a few milliseconds after its insert.
		FetchCooldown: fetchCooldown,
		Logger:        logger,
	})
	if err != nil {
		return fmt.Errorf("sqlstore: making the River worker client: %w", err)
	}
	if err := q.adopt(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while adopting: not a failure
		}
		return fmt.Errorf("sqlstore: queueing jobs for runs without one: %w", err)
	}
	// Started on a context of its own: River treats the end of its start
	// context as a hard stop, and the runs' contexts end with ctx anyway.
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("sqlstore: starting River: %w", err)
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := client.Stop(stop); err != nil {
		hard, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		return errors.Join(fmt.Errorf("sqlstore: stopping River: %w", err), client.StopAndCancel(hard))
	}
	return nil
}

// stopTimeout bounds how long stopping River waits for its jobs, whose
// runs stop with the Work context.
const stopTimeout = 10 * time.Second

// runWorker works a run job by handing its run to the runtime.
type runWorker struct {
	river.WorkerDefaults[runJob]
	work func(ctx context.Context, runID string) error
}

// Work implements river.Worker.
func (w *runWorker) Work(ctx context.Context, job *river.Job[runJob]) error {
	return w.work(ctx, job.Args.RunID)
}
