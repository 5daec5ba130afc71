package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
)

// sseEvent is one event read from /v1/events.
type sseEvent struct {
	name string
	data string
}

// runID is the run an event is about.
func (e sseEvent) runID(t *testing.T) string {
	t.Helper()
	var v struct {
		ID    string `json:"id"`
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(e.data), &v); err != nil {
		t.Fatalf("event %s: data %q is not JSON: %v", e.name, e.data, err)
	}
	if e.name == "step" {
		return v.RunID
	}
	return v.ID
}

func (e sseEvent) run(t *testing.T) api.Run {
	t.Helper()
	var r api.Run
	if e.name != "run" || json.Unmarshal([]byte(e.data), &r) != nil {
		t.Fatalf("event %s %q is not a run event", e.name, e.data)
	}
	return r
}

func (e sseEvent) step(t *testing.T) api.StepEvent {
	t.Helper()
	var s api.StepEvent
	if e.name != "step" || json.Unmarshal([]byte(e.data), &s) != nil {
		t.Fatalf("event %s %q is not a step event", e.name, e.data)
	}
	return s
}

// stream is an open GET /v1/events, read on its own goroutine.
type stream struct {
	t        *testing.T
	header   http.Header
	events   chan sseEvent
	comments chan string
	ended    chan struct{} // closed when the body ends
	close    func()
	seen     []sseEvent
}

// subscribe opens /v1/events with query, with f.client's token if it has
// one; the test's end closes it.
func (f *fixture) subscribe(query string) *stream {
	f.t.Helper()
	return f.subscribeAs(query, f.client.Token)
}

// subscribeAs opens /v1/events with query and token (none if empty).
func (f *fixture) subscribeAs(query, token string) *stream {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.url+"/v1/events"+query, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.http.Do(req)
	if err != nil {
		cancel()
		f.t.Fatalf("GET /v1/events%s: %v", query, err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		f.t.Fatalf("GET /v1/events%s: %d", query, resp.StatusCode)
	}
	s := &stream{t: f.t, header: resp.Header, events: make(chan sseEvent, 1000), comments: make(chan string, 1000), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				s.comments <- line
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	s.close = func() {
		cancel()
		<-s.ended
	}
	f.t.Cleanup(s.close)
	return s
}

// next returns the next event for which match is true; the others are
// kept in seen.
func (s *stream) next(what string, match func(sseEvent) bool) sseEvent {
	s.t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case ev := <-s.events:
			s.seen = append(s.seen, ev)
			if match(ev) {
				return ev
			}
		case <-s.ended:
			s.t.Fatalf("the stream ended before %s; seen %v", what, s.seen)
		case <-timeout:
			s.t.Fatalf("no %s on the stream; seen %v", what, s.seen)
		}
	}
}

// saw returns an event seen already or the next one for which match is
// true: for events whose order does not matter.
func (s *stream) saw(what string, match func(sseEvent) bool) sseEvent {
	s.t.Helper()
	for _, ev := range s.seen {
		if match(ev) {
			return ev
		}
	}
	return s.next(what, match)
}

// runIs matches a run event of run id in status.
func runIs(t *testing.T, id string, status agent.Status) func(sseEvent) bool {
	return func(ev sseEvent) bool {
		return ev.name == "run" && ev.run(t).ID == id && ev.run(t).Status == string(status)
	}
}

// never is the interval of a poller that reads the store only when
// nudged: what a test sees then came from a subscription or an API call.
func never(cfg *api.Config) { cfg.EventInterval = time.Hour }

// The stream without ?run starts with the state of the runs there are, and
// then shows the API's own changes at once (no interval passes here).
func TestEventsRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, configure: never})
	a, b := f.create(finalScript), f.create(finalScript)
	s := f.subscribe("")
	if ct := s.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	s.saw("run a's current state", runIs(t, a.ID, agent.StatusQueued))
	s.saw("run b's current state", runIs(t, b.ID, agent.StatusQueued))

	c := f.create(finalScript)
	s.next("the new run", runIs(t, c.ID, agent.StatusQueued))
	if _, err := f.client.CancelRun(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	ev := s.next("run a cancelled", runIs(t, a.ID, agent.StatusCancelled))
	if r := ev.run(t); r.Reason != "cancelled" || r.FinishedAt == nil {
		t.Errorf("cancelled run event %+v", r)
	}
	for _, ev := range s.seen {
		if ev.name != "run" {
			t.Errorf("the stream of all runs sent a %s event", ev.name)
		}
	}
}

// A run's stream starts with the run and every step it has so far, then
// shows new steps and changes: here a cancel, and the cancelled call's
// step recorded after it.
func TestEventsRunSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{configure: func(c *api.Config) { c.EventInterval = 20 * time.Millisecond }})
	run := f.create(slowScript)
	f.waitToolStarted("slow")
	s := f.subscribe("?run=" + run.ID)
	first := s.next("the first event", func(sseEvent) bool { return true })
	if r := first.run(t); r.ID != run.ID || r.Status != "running" {
		t.Fatalf("first event %+v, want the run, running", r)
	}
	model := s.next("the model step", func(ev sseEvent) bool { return ev.name == "step" }).step(t)
	if model.RunID != run.ID || model.Seq != 1 || model.Kind != "model" || !strings.Contains(string(model.Args), "mcp_test_slow") {
		t.Errorf("first step event %+v, want the model turn asking for mcp_test_slow", model)
	}

	if _, err := f.client.CancelRun(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	s.next("the run cancelled", runIs(t, run.ID, agent.StatusCancelled))
	call := s.next("the cancelled call's step", func(ev sseEvent) bool { return ev.name == "step" && ev.step(t).Kind == "tool" }).step(t)
	if call.Seq != 2 || call.Tool != "mcp_test_slow" || call.Outcome != "cancelled" {
		t.Errorf("tool step event %+v, want mcp_test_slow cancelled", call)
	}
	for _, ev := range s.seen {
		if id := ev.runID(t); id != run.ID {
			t.Errorf("the stream of %s sent an event of %s", run.ID, id)
		}
	}
}

// ?run shows that run only.
func TestEventsRunFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, configure: never})
	a, b := f.create(finalScript), f.create(finalScript)
	s := f.subscribe("?run=" + a.ID)
	s.next("run a", runIs(t, a.ID, agent.StatusQueued))
	for _, id := range []string{b.ID, a.ID} { // b first: its event would come first
		if _, err := f.client.CancelRun(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	s.next("run a cancelled", runIs(t, a.ID, agent.StatusCancelled))
	for _, ev := range s.seen {
		if id := ev.runID(t); id != a.ID {
			t.Errorf("the stream of %s sent an event of %s", a.ID, id)
		}
	}
}

// Changes made elsewhere — by a worker process on the same database — are
// found by polling the store.
func TestEventsPollTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, configure: func(c *api.Config) { c.EventInterval = 10 * time.Millisecond }})
	run := f.create(finalScript)
	all, one := f.subscribe(""), f.subscribe("?run="+run.ID)
	all.next("the run", runIs(t, run.ID, agent.StatusQueued))
	one.next("the run", runIs(t, run.ID, agent.StatusQueued))

	ctx := context.Background()
	if r, err := f.store.RunClaimID(ctx, run.ID, "worker-elsewhere", time.Now().Add(time.Hour)); err != nil || r == nil {
		t.Fatalf("RunClaimID = %v, %v", r, err)
	}
	if err := f.store.StepAppend(ctx, "worker-elsewhere", &agent.Step{RunID: run.ID, At: time.Now(), Kind: agent.StepModel, Round: 1, Text: "thinking"}); err != nil {
		t.Fatal(err)
	}
	step := one.next("the step", func(ev sseEvent) bool { return ev.name == "step" }).step(t)
	if step.Seq != 1 || step.Text != "thinking" {
		t.Errorf("step event %+v", step)
	}
	if ok, err := f.store.RunFinish(ctx, run.ID, "", agent.StatusFailed, agent.ReasonFailed, "boom"); err != nil || !ok {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	for _, s := range []*stream{all, one} {
		if r := s.next("the run failed", runIs(t, run.ID, agent.StatusFailed)).run(t); r.Error != "boom" {
			t.Errorf("failed run event %+v", r)
		}
	}
}

// One poller serves every stream: one run list read per poll, however
// many streams are open, and step reads only for watched runs.
func TestEventsOnePollerForAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, configure: never})
	a, b, c := f.create(finalScript), f.create(finalScript), f.create(finalScript)
	all := f.subscribe("")
	all.next("run c", runIs(t, c.ID, agent.StatusQueued))
	sa := f.subscribe("?run=" + a.ID)
	sa.next("run a", runIs(t, a.ID, agent.StatusQueued))
	sb := f.subscribe("?run=" + b.ID)
	sb.next("run b", runIs(t, b.ID, agent.StatusQueued))

	lists, steps := f.store.runLists.Load(), f.store.stepLists.Load()
	if _, err := f.client.CancelRun(context.Background(), a.ID); err != nil { // one nudge: one poll
		t.Fatal(err)
	}
	all.next("run a cancelled", runIs(t, a.ID, agent.StatusCancelled))
	sa.next("run a cancelled", runIs(t, a.ID, agent.StatusCancelled))
	if n := f.store.runLists.Load() - lists; n != 1 {
		t.Errorf("one poll for three streams listed runs %d times, want 1", n)
	}
	if n := f.store.stepLists.Load() - steps; n != 2 {
		t.Errorf("one poll listed steps %d times, want 2 (the two watched runs)", n)
	}
}

func TestEventsUnknownRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	status, header, body := f.raw("GET", "/v1/events?run=run_nope", "")
	checkError(t, status, header, body, http.StatusNotFound, "not_found")
}

// A client that goes away ends its handler (and with the last one, the
// poller: TestMain's leak check would find it).
func TestEventsClientGone(t *testing.T) {
	t.Parallel()
	returned := make(chan struct{}, 1)
	f := newFixture(t, options{idle: true, configure: never, wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if r.URL.Path == "/v1/events" {
				returned <- struct{}{}
			}
		})
	}})
	run := f.create(finalScript)
	s := f.subscribe("?run=" + run.ID)
	s.next("the run", runIs(t, run.ID, agent.StatusQueued))
	s.close()
	select {
	case <-returned:
	case <-time.After(patience):
		t.Fatal("the handler did not return after its client went away")
	}
}

// Closing Config.Stop ends every stream: a server shutting down does not
// wait for them.
func TestEventsStop(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	f := newFixture(t, options{idle: true, configure: func(c *api.Config) { c.Stop = stop }})
	run := f.create(finalScript)
	all, one := f.subscribe(""), f.subscribe("?run="+run.ID)
	all.next("the run", runIs(t, run.ID, agent.StatusQueued))
	one.next("the run", runIs(t, run.ID, agent.StatusQueued))
	close(stop)
	for _, s := range []*stream{all, one} {
		select {
		case <-s.ended:
		case <-time.After(patience):
			t.Fatal("a stream did not end when Stop closed")
		}
	}
}

// An idle stream sends heartbeat comments, so proxies keep it open.
func TestEventsHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, configure: func(c *api.Config) { c.EventHeartbeat = 10 * time.Millisecond }})
	s := f.subscribe("")
	select {
	case c := <-s.comments:
		if c != ": heartbeat" {
			t.Errorf("comment %q", c)
		}
	case <-time.After(patience):
		t.Fatal("no heartbeat on an idle stream")
	}
}
