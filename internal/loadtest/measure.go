package loadtest

import (
	"context"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// Storm is how a measurement cancels: InFlight runs are held; Wave of them
// are cancelled at once, and replaced by new ones (so InFlight stay in
// flight), until Samples cancels are measured. A Wave of 1 is one cancel
// after another; a Wave of InFlight cancels them all at once, once.
type Storm struct {
	InFlight, Wave, Samples int
}

// Result is what one [Storm] measured.
type Result struct {
	Storm
	// ToWire, ToStopped and Took summarise the samples (see [Sample]).
	ToWire, ToStopped, Took Stats
	// AfterTook summarises each sample's ToWire less its Took: what the
	// signal took once the cancel had returned (the row written, the
	// call's context cancelled), on a machine whose load moves both.
	AfterTook Stats
	// Counted says whether the store's statements were counted (in
	// process only): across processes, PerCancel and its kin are zero
	// because nobody counted, not because nothing was sent.
	Counted bool
	// PerCancel is the statements the store sent per cancel, from the
	// start of a wave until each cancelled run had recorded its last
	// step: the cancel itself and everything it set off.
	PerCancel float64
	// WritesPerCancel is the part of PerCancel that changed rows.
	WritesPerCancel float64
	// PoolPerCancel is every query of the pool per cancel, River's
	// included (PostgreSQL only).
	PoolPerCancel float64
	// HeapPerRun and StackPerRun are the growth of the live heap and of
	// goroutine stacks per run in flight, in bytes, and GoroutinesPerRun
	// the growth of goroutines: the share of the processes executing runs
	// (the node's, not the MCP servers'). Across processes they come from
	// the workers' metrics: HeapPerRun then includes garbage not yet
	// collected (nobody can collect another process's first), and
	// RSSPerRun is the growth of their resident memory (zero in process).
	HeapPerRun, StackPerRun, RSSPerRun, GoroutinesPerRun float64
	// IdlePollsPerInterval is the watcher's backstop polls per interval
	// while the runs were in flight and nothing happened (should be 1),
	// and IdleStatementsPerSecond every statement the store sent then.
	IdlePollsPerInterval, IdleStatementsPerSecond float64
	// LastStepsMissing counts cancelled runs that ended without recording
	// their cancelled tool step (the store was too busy to take it in
	// time; the runtime logs it). The row still says cancelled.
	LastStepsMissing int
}

// idleWindow is how long a measurement watches the store at rest with its
// runs in flight.
const idleWindow = 3 * time.Second

// Measure holds s.InFlight runs, watches the store at rest, and cancels
// as s says, then cancels the rest (unmeasured) and waits until every run
// has ended. It checks what a cancel must do: every cancelled call was
// seen cancelled by the server, and no run is left running.
func (h *Harness) Measure(ctx context.Context, s Storm) (*Result, error) {
	ctx, done := h.guard(ctx)
	defer done()
	if s.InFlight <= 0 || s.Wave <= 0 || s.Wave > s.InFlight {
		return nil, fmt.Errorf("loadtest: storm %+v: want 0 < Wave ≤ InFlight", s)
	}
	if s.Samples < s.Wave {
		s.Samples = s.Wave
	}
	res := &Result{Storm: s, Counted: h.Counted()}
	f0, err := h.footprint(ctx)
	if err != nil {
		return nil, err
	}
	held, err := h.Hold(ctx, s.InFlight)
	if err != nil {
		return nil, err
	}
	f1, err := h.footprint(ctx)
	if err != nil {
		return nil, err
	}
	n := float64(s.InFlight)
	res.HeapPerRun, res.StackPerRun = (f1.heap-f0.heap)/n, (f1.stack-f0.stack)/n
	res.RSSPerRun, res.GoroutinesPerRun = (f1.rss-f0.rss)/n, (f1.goroutines-f0.goroutines)/n

	c0, t0 := h.Counts(), time.Now()
	select {
	case <-time.After(idleWindow):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idle := time.Since(t0)
	f2, err := h.footprint(ctx)
	if err != nil {
		return nil, err
	}
	// The polls went on during the scrape after the window too: the
	// interval is from the scrape before (f1) to the scrape after (f2),
	// within one poll of exact.
	res.IdlePollsPerInterval = (f2.polls - f1.polls) / float64(h.watchers()) / (float64(idle) / float64(agent.DefaultWatchInterval))
	res.IdleStatementsPerSecond = float64(h.Counts().Sub(c0).Statements) / idle.Seconds()

	var wire, stopped, took, after []time.Duration
	var used sqlstore.Counts
	for len(wire) < s.Samples {
		wave := held[:s.Wave]
		c0 := h.Counts()
		samples, err := h.Cancel(ctx, wave)
		if err != nil {
			return nil, err
		}
		missing, err := h.waitEnded(ctx, wave)
		if err != nil {
			return nil, err
		}
		res.LastStepsMissing += missing
		d := h.Counts().Sub(c0)
		used.Statements += d.Statements
		used.Writes += d.Writes
		used.PoolQueries += d.PoolQueries
		for _, sm := range samples {
			wire = append(wire, sm.ToWire)
			stopped = append(stopped, sm.ToStopped)
			took = append(took, sm.Took)
			after = append(after, sm.ToWire-sm.Took)
		}
		held = held[s.Wave:]
		if len(wire) >= s.Samples || s.Wave == s.InFlight {
			break
		}
		more, err := h.Hold(ctx, s.Wave)
		if err != nil {
			return nil, err
		}
		held = append(held, more...)
	}
	res.ToWire, res.ToStopped, res.Took = Summarise(wire), Summarise(stopped), Summarise(took)
	res.AfterTook = Summarise(after)
	res.PerCancel = float64(used.Statements) / float64(len(wire))
	res.WritesPerCancel = float64(used.Writes) / float64(len(wire))
	res.PoolPerCancel = float64(used.PoolQueries) / float64(len(wire))
	if len(held) > 0 {
		if _, err := h.Cancel(ctx, held); err != nil {
			return nil, err
		}
		missing, err := h.waitEnded(ctx, held)
		if err != nil {
			return nil, err
		}
		res.LastStepsMissing += missing
	}
	return res, h.checkNoneRunning(ctx)
}

// stepPatience is how long waitEnded waits, in all, for the last steps of
// runs that are terminal. The runtime records it best-effort (within
// 10 s of bookkeeping): a store too busy to take it leaves it out, which
// the harness counts rather than waits for forever.
const stepPatience = 30 * time.Second

// waitEnded waits until each run is terminal and has recorded its tool
// step (the segment that held it is over), and returns how many runs
// ended without that step.
func (h *Harness) waitEnded(ctx context.Context, held []*Held) (missing int, err error) {
	var terminalSince time.Time // when the first run found terminal without its step was
	for _, hd := range held {
		for {
			run, err := h.probe.RunGet(ctx, hd.RunID)
			if err != nil {
				return missing, err
			}
			steps, err := h.probe.StepList(ctx, hd.RunID)
			if err != nil {
				return missing, err
			}
			if run.Status.Terminal() && len(steps) >= 2 {
				break
			}
			if run.Status.Terminal() && terminalSince.IsZero() {
				terminalSince = time.Now()
			}
			if !terminalSince.IsZero() && time.Since(terminalSince) > stepPatience {
				missing++
				break
			}
			select {
			case <-ctx.Done():
				return missing, fmt.Errorf("loadtest: run %s is %s with %d steps: %w", hd.RunID, run.Status, len(steps), ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return missing, nil
}

// checkNoneRunning fails if any run is running or queued.
func (h *Harness) checkNoneRunning(ctx context.Context) error {
	counts, err := h.probe.RunCountByStatus(ctx)
	if err != nil {
		return err
	}
	if counts[agent.StatusRunning] != 0 || counts[agent.StatusQueued] != 0 {
		return fmt.Errorf("loadtest: %d runs left running and %d queued", counts[agent.StatusRunning], counts[agent.StatusQueued])
	}
	return nil
}
