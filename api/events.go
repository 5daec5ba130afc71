package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// StepEvent is the data of an `event: step` on the event stream: a step
// and the run it belongs to.
type StepEvent struct {
	RunID string `json:"run_id"`
	Step
}

// Defaults of the event stream.
const (
	// DefaultEventInterval is how often the event stream reads the store
	// while anyone is subscribed.
	DefaultEventInterval = 250 * time.Millisecond
	// DefaultEventHeartbeat is how often an idle stream sends a comment,
	// so that proxies keep it open.
	DefaultEventHeartbeat = 15 * time.Second
	// DefaultEventRecheck is how often an open stream reads its token
	// again, so that a revoked token's stream ends within about a second:
	// one indexed read per open stream per second, and none without
	// tokens.
	DefaultEventRecheck = time.Second
	// eventListLimit is how many of the newest runs the run list reads:
	// the window whose changes the stream without ?run reports.
	eventListLimit = agent.DefaultRunListLimit
	// stepSettle is how long a watched run's steps are still read after
	// the run is seen finished: a cancelled run's executor records the
	// cancelled call's step after the cancel has finished the run.
	stepSettle = 3 * time.Second
	// subscriberBacklog is how many polls' worth of events a subscriber
	// may fall behind before it is dropped (its client reconnects and
	// gets the current state again).
	subscriberBacklog = 16
)

// eventRoutes registers the event stream.
func (s *server) eventRoutes(mux *http.ServeMux) {
	s.route(mux, "GET /v1/events", token.RoleViewer, s.streamEvents)
}

// event is one server-sent event.
type event struct {
	name string // "run" or "step"
	data []byte // JSON
}

// streamEvents serves GET /v1/events: `event: run` for every change of a
// run among the newest, or — with ?run=ID — that run's `run` and `step`
// events, each stream beginning with the current state.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request) {
	runID := r.URL.Query().Get("run")
	if runID != "" {
		if _, err := s.cfg.Store.RunGet(r.Context(), runID); err != nil {
			s.fail(w, err)
			return
		}
	}
	rc := http.NewResponseController(w)
	// A stream outlives any write deadline the server sets for requests.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}

	sub := s.events.subscribe(runID)
	defer s.events.unsubscribe(sub)
	heartbeat := time.NewTicker(s.cfg.EventHeartbeat)
	defer heartbeat.Stop()
	// A token is checked when the stream opens; the stream outlives that
	// check, so it checks again while it is open.
	var recheck <-chan time.Time
	opened, _ := r.Context().Value(principalKey{}).(*principal)
	if opened != nil && opened.token != nil {
		t := time.NewTicker(s.cfg.EventRecheck)
		defer t.Stop()
		recheck = t.C
	}
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.cfg.Stop:
			return
		case <-sub.dropped:
			return
		case <-recheck:
			if !s.stillAllowed(r, opened) {
				return
			}
			continue
		case <-heartbeat.C:
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
		case batch := <-sub.batches:
			for _, ev := range batch {
				if _, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return // the client went away
		}
	}
}

// stillAllowed reads the token of r, a stream opened by opened, again: false
// if it was revoked or is gone, or if its role is not the one the stream
// was opened with (a role that changed no longer vouches for the stream;
// its client reconnects under the new one). A store that cannot be read
// cannot vouch either: the stream ends, and its client's reconnection is
// answered 503 until the store is back (the poller could not read the
// runs for it anyway).
func (s *server) stillAllowed(r *http.Request, opened *principal) bool {
	p, reason, err := s.authenticate(r)
	if err == nil && reason == "" {
		s.touch(r.Context(), p)
	}
	switch {
	case err != nil:
		reason = "the token store cannot be read"
		s.cfg.Logger.Warn("api: event stream: re-reading its token failed", "token", opened.token.ID, "error", err)
	case reason == "" && (p.token == nil || p.token.ID != opened.token.ID || p.role != opened.role):
		reason = "role changed"
	case reason == "":
		return true
	}
	s.cfg.Logger.Info("api: event stream ended: its token no longer allows it", "token", opened.token.ID, "reason", reason)
	return false
}

// A hub feeds every event stream of one server from one shared poller,
// which runs only while someone is subscribed. The store is the source of
// truth, not this process's own runtime: runs may execute in andon workers
// elsewhere on the same database.
//
// Cost, per interval while at least one stream is open: one RunList of the
// newest 100 runs; one RunGet for each watched run (a ?run stream) that is
// not among them; one StepList for each watched run that is not finished,
// was finished less than three seconds ago, or is newly watched. Nothing
// while no stream is open. The API's own changes (create, cancel, approve,
// deny) nudge the poller, so they show at once rather than at the next
// interval.
type hub struct {
	store    agent.Store
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time
	nudges   chan struct{} // capacity 1: a nudge pending or not

	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	poller *poller // nil while nobody is subscribed
}

// subscriber is one open stream.
type subscriber struct {
	run     string // "" for all runs
	batches chan []event
	dropped chan struct{} // closed when the hub drops a subscriber that fell behind
	fresh   bool          // has not had the current state yet; under hub.mu
}

func newHub(cfg *Config) *hub {
	return &hub{store: cfg.Store, interval: cfg.EventInterval, logger: cfg.Logger, now: cfg.Now,
		nudges: make(chan struct{}, 1), subs: map[*subscriber]struct{}{}}
}

// nudge makes the poller read the store now rather than at its next
// interval. It never blocks.
func (h *hub) nudge() {
	select {
	case h.nudges <- struct{}{}:
	default:
	}
}

func (h *hub) subscribe(runID string) *subscriber {
	sub := &subscriber{run: runID, batches: make(chan []event, subscriberBacklog), dropped: make(chan struct{}), fresh: true}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	if h.poller == nil {
		h.poller = newPoller(h)
		go h.poller.run()
	}
	h.mu.Unlock()
	h.nudge() // the newcomer's current state, now
	return sub
}

// unsubscribe removes sub; the last one out stops the poller and waits for
// it, so that no goroutine outlives the streams.
func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	delete(h.subs, sub)
	p := h.poller
	if len(h.subs) > 0 || p == nil {
		h.mu.Unlock()
		return
	}
	h.poller = nil
	h.mu.Unlock()
	p.stop()
	<-p.done
}

// poller reads the store for a hub and sends each subscriber what changed.
// Its state is its own: a poller that is stopping never shares it with its
// successor, and delivers nothing once replaced.
type poller struct {
	h      *hub
	ctx    context.Context
	stop   context.CancelFunc
	done   chan struct{}
	runs   map[string][]byte // last seen api.Run JSON, by run id
	watchs map[string]*watch // runs someone streams with ?run
}

// watch is what the poller knows of a watched run's steps.
type watch struct {
	steps      []event // every step event so far, in order
	lastSeq    int
	listed     bool      // its steps have been read at least once
	finishedAt time.Time // when the poller first saw it finished; zero before
}

func newPoller(h *hub) *poller {
	ctx, stop := context.WithCancel(context.Background())
	return &poller{h: h, ctx: ctx, stop: stop, done: make(chan struct{}),
		runs: map[string][]byte{}, watchs: map[string]*watch{}}
}

func (p *poller) run() {
	defer close(p.done)
	// The first poll comes from the first subscriber's nudge.
	timer := time.NewTimer(p.h.interval)
	defer timer.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-timer.C:
		case <-p.h.nudges:
		}
		p.poll()
		timer.Reset(p.h.interval)
	}
}

// poll reads the store once and delivers what changed. A store error skips
// the poll (logged); the next one catches up.
func (p *poller) poll() {
	h := p.h
	h.mu.Lock()
	subs := make([]*subscriber, 0, len(h.subs))
	watched := map[string]bool{}
	for sub := range h.subs {
		subs = append(subs, sub)
		if sub.run != "" {
			watched[sub.run] = true
		}
	}
	h.mu.Unlock()

	list, err := h.store.RunList(p.ctx, agent.RunFilter{Limit: eventListLimit})
	if err != nil {
		p.warn("listing runs", err)
		return
	}
	cur := make(map[string][]byte, len(list)+len(watched))
	// brief is the list's runs as a list shows them (listed), for the
	// streams of all runs; a ?run stream gets the whole run.
	brief := make(map[string][]byte, len(list))
	order := make([]string, 0, len(list))
	status := map[string]agent.Status{}
	for _, run := range list {
		cur[run.ID], brief[run.ID] = runJSONs(run)
		order = append(order, run.ID)
		status[run.ID] = run.Status
	}
	for id := range watched {
		if cur[id] != nil {
			continue
		}
		run, err := h.store.RunGet(p.ctx, id)
		if err != nil {
			if !errors.Is(err, agent.ErrNotFound) {
				p.warn("reading a watched run", err)
			}
			continue
		}
		cur[id], _ = runJSONs(run)
		status[id] = run.Status
	}
	changed := map[string]bool{}
	for id, data := range cur {
		if !slices.Equal(p.runs[id], data) {
			changed[id] = true
		}
	}
	p.runs = cur

	newSteps := map[string][]event{}
	for id := range p.watchs {
		if !watched[id] {
			delete(p.watchs, id)
		}
	}
	for id := range watched {
		st, ok := status[id]
		if !ok {
			continue
		}
		w := p.watchs[id]
		if w == nil {
			w = &watch{}
			p.watchs[id] = w
		}
		if st.Terminal() && w.finishedAt.IsZero() {
			w.finishedAt = h.now()
		}
		if w.listed && st.Terminal() && h.now().Sub(w.finishedAt) > stepSettle {
			continue
		}
		steps, err := h.store.StepList(p.ctx, id)
		if err != nil {
			p.warn("listing a watched run's steps", err)
			continue
		}
		w.listed = true
		for _, step := range steps {
			if step.Seq <= w.lastSeq {
				continue
			}
			data, _ := json.Marshal(StepEvent{RunID: id, Step: toStep(step)})
			ev := event{name: "step", data: data}
			w.steps, w.lastSeq = append(w.steps, ev), step.Seq
			newSteps[id] = append(newSteps[id], ev)
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.poller != p {
		return // stopped and perhaps replaced: deliver nothing stale
	}
	for _, sub := range subs {
		if _, ok := h.subs[sub]; !ok {
			continue
		}
		var batch []event
		switch {
		case sub.run == "":
			for _, id := range order {
				if sub.fresh || changed[id] {
					batch = append(batch, event{name: "run", data: brief[id]})
				}
			}
		case cur[sub.run] == nil:
			continue // not read this time; the next poll will
		case sub.fresh:
			batch = append([]event{{name: "run", data: cur[sub.run]}}, p.watchs[sub.run].steps...)
		default:
			if changed[sub.run] {
				batch = append(batch, event{name: "run", data: cur[sub.run]})
			}
			batch = append(batch, newSteps[sub.run]...)
		}
		sub.fresh = false
		if len(batch) == 0 {
			continue
		}
		select {
		case sub.batches <- batch:
		default:
			// Fell behind: drop it rather than block everyone; its
			// client reconnects and starts from the current state.
			delete(h.subs, sub)
			close(sub.dropped)
		}
	}
}

func (p *poller) warn(what string, err error) {
	if p.ctx.Err() != nil {
		return // stopping: the error is ours
	}
	p.h.logger.Warn("api: event stream: "+what+" failed", "error", err)
}

// runJSONs is run's JSON whole, and as a list shows it (see listed): the
// same bytes when nothing is left out.
func runJSONs(run *agent.Run) (whole, inList []byte) {
	r := toRun(run)
	whole, _ = json.Marshal(r)
	if l := listed(r); l.RequestOmitted || (l.Pending != nil && l.Pending.ArgsOmitted) {
		inList, _ = json.Marshal(l)
		return whole, inList
	}
	return whole, whole
}
