package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// Transports the MCP server is reached over.
const (
	Stdio = "stdio" // a subprocess speaking newline-delimited JSON-RPC
	HTTP  = "http"  // a subprocess serving stateless 2026-07-28 HTTP on 127.0.0.1
)

// Config configures a [Harness]. DB and Dir are required.
type Config struct {
	// DB is the database: a SQLite file's path or a PostgreSQL URL (a
	// schema of its own: the harness's runs fill it).
	DB string
	// Dir holds the record files of the MCP servers (and the SQLite file,
	// if DB names one there).
	Dir string
	// Transport is how the node reaches the MCP server: Stdio or HTTP.
	// Empty means Stdio.
	Transport string
	// Workers is how many runs the node executes at once, as
	// node.Config.Workers: zero means the node's default. A harness that
	// holds runs needs one worker per run it holds: MaxWorkers at most.
	Workers int
	// Logger receives the node's diagnostics. Nil means discard them.
	Logger *slog.Logger
	// Processes, if positive, runs andon as real processes instead of a
	// node in this one: `andon serve --workers 0` (the API: runs are
	// submitted and cancelled through it, with its token, as an operator
	// does) and Processes `andon worker` processes on DB, each executing
	// up to Workers runs (zero: the default) with MCP servers of its own
	// (stdio: one subprocess each; HTTP: one mcptest HTTP server each, so
	// that every server has one client and its request ids are unique).
	// The store's statements are then not counted (they are other
	// processes'), and memory and goroutines come from the workers'
	// metrics endpoints.
	Processes int
	// Andon is the andon executable for Processes; empty means build
	// cmd/andon into Dir (with the go command, from this module).
	Andon string
}

// Harness is andon — one node on a counted store in this process, or
// serve and workers as processes — with its MCP servers, ready to hold
// runs and cancel them. Close it when done.
type Harness struct {
	cfg     Config
	counter *sqlstore.StatementCounter // in process only
	store   *sqlstore.Store            // in process only
	probe   *sqlstore.Store            // the harness's own reads, not counted
	node    *node.Node                 // in process only
	procs   *processes                 // across processes only
	calls   *calls
	servers []*httpServer // HTTP only

	stop     context.CancelFunc
	ended    chan struct{} // closed when the node's Run returned, or a process exited on its own
	endOnce  sync.Once
	done     sync.WaitGroup
	runErr   error
	closeErr error
	closeMu  sync.Once
}

// MaxWorkers is the most runs a node executes at once: River's limit on
// one queue's workers, and so the most runs a harness can hold.
const MaxWorkers = 10_000

// holdTimeout bounds a slow call: longer than any measurement.
const holdTimeout = 30 * time.Minute

// Start opens the store, starts the MCP servers (for HTTP) and andon
// working runs, and returns once andon runs.
func Start(ctx context.Context, cfg Config) (_ *Harness, err error) {
	if cfg.DB == "" || cfg.Dir == "" {
		return nil, errors.New("loadtest: Config.DB and Config.Dir are required")
	}
	if cfg.Transport == "" {
		cfg.Transport = Stdio
	}
	if cfg.Transport != Stdio && cfg.Transport != HTTP {
		return nil, fmt.Errorf("loadtest: unknown transport %q: want %q or %q", cfg.Transport, Stdio, HTTP)
	}
	h := &Harness{cfg: cfg, calls: newCalls(), ended: make(chan struct{})}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h.stop = stop
	if cfg.Processes > 0 {
		err = h.startProcesses(ctx, runCtx)
	} else {
		err = h.startNode(ctx, runCtx)
	}
	if err != nil {
		return nil, err
	}
	if h.probe, err = sqlstore.Open(ctx, cfg.DB, sqlstore.OpenLogger(cfg.Logger)); err != nil {
		return nil, err
	}
	return h, nil
}

// server returns the catalogue entry of an MCP server "load" recording
// to a file of its own, which the harness follows until it closes: a
// stdio subprocess, or an mcptest HTTP server the harness starts (and
// stops in Close).
func (h *Harness) server(ctx, runCtx context.Context) (catalogue.Server, error) {
	record := filepath.Join(h.cfg.Dir, fmt.Sprintf("records-%s.jsonl", randomTag()))
	no := false
	server := catalogue.Server{Name: "load", RequiresApproval: &no}
	server.Budget.Timeout = holdTimeout
	if err := os.WriteFile(record, nil, 0o600); err != nil {
		return server, fmt.Errorf("loadtest: %w", err)
	}
	var err error
	switch h.cfg.Transport {
	case Stdio:
		if h.cfg.Processes > 0 { // the worker's own executable serves it
			server.Command = []string{catalogue.AndonExecutable, "mcptest", "serve", "-record", record}
		} else if server.Command, err = serverCommand(record); err != nil {
			return server, err
		}
		server.Env = map[string]string{ServeEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	case HTTP:
		s, err := startHTTPServer(ctx, record)
		if err != nil {
			return server, err
		}
		h.servers = append(h.servers, s)
		server.URL = s.url
	}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		h.calls.follow(runCtx, record)
	}()
	return server, nil
}

// startNode starts the node in this process, on a counted store.
func (h *Harness) startNode(ctx, runCtx context.Context) (err error) {
	cfg := h.cfg
	server, err := h.server(ctx, runCtx)
	if err != nil {
		return err
	}
	h.counter = &sqlstore.StatementCounter{}
	if h.store, err = sqlstore.Open(ctx, cfg.DB, sqlstore.OpenCounter(h.counter), sqlstore.OpenLogger(cfg.Logger)); err != nil {
		return err
	}
	key, err := vault.NewKey()
	if err != nil {
		return err
	}
	ncfg := &node.Config{Store: h.store, Key: key, Servers: &catalogue.Config{Servers: []catalogue.Server{server}},
		Workers: cfg.Workers, Logger: cfg.Logger}
	ncfg.Egress.AllowedHosts = []string{"127.0.0.1"}
	if h.node, err = node.New(ctx, ncfg); err != nil {
		return err
	}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		defer close(h.ended)
		if err := h.node.Run(runCtx); runCtx.Err() == nil {
			h.runErr = err
		}
	}()
	return nil
}

// startProcesses starts serve and the workers, each worker with an MCP
// server of its own.
func (h *Harness) startProcesses(ctx, runCtx context.Context) (err error) {
	h.procs, err = startProcesses(ctx, h.cfg, func(int) (string, error) {
		server, err := h.server(ctx, runCtx)
		if err != nil {
			return "", err
		}
		return serverYAML(server), nil
	})
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-h.procs.ended:
			h.endOnce.Do(func() { close(h.ended) })
		case <-runCtx.Done():
		}
	}()
	return nil
}

// serverYAML is a config file's entry for server.
func serverYAML(s catalogue.Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    requires_approval: false\n    timeout: %s\n", s.Name, s.Budget.Timeout)
	if s.URL != "" {
		fmt.Fprintf(&b, "    url: %q\n", s.URL)
		return b.String()
	}
	b.WriteString("    command: [")
	for i, arg := range s.Command {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", arg)
	}
	b.WriteString("]\n    env: {GORACE: \"atexit_sleep_ms=0\"}\n")
	return b.String()
}

// Close stops andon and the MCP servers and closes the store. It returns
// an error if andon stopped on its own before, or (processes) did not
// exit cleanly.
func (h *Harness) Close() error {
	h.closeMu.Do(func() {
		if h.procs != nil {
			h.closeErr = h.procs.close()
		}
		if h.stop != nil {
			h.stop()
		}
		h.done.Wait()
		if h.node != nil {
			h.node.Close()
		}
		if h.store != nil {
			_ = h.store.Close()
		}
		if h.probe != nil {
			_ = h.probe.Close()
		}
		for _, s := range h.servers {
			s.stop()
		}
	})
	return errors.Join(h.runErr, h.closeErr)
}

// errNodeStopped ends a wait when the node stopped on its own.
var errNodeStopped = errors.New("loadtest: andon stopped on its own (Close says why)")

// guard returns ctx, ended early if the node stops on its own.
func (h *Harness) guard(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-h.ended:
			cancel(errNodeStopped)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Store returns the store of the node in this process (nil across
// processes).
func (h *Harness) Store() *sqlstore.Store { return h.store }

// Counted reports whether the store's statements are counted: in process
// only, since across processes they are other processes'.
func (h *Harness) Counted() bool { return h.counter != nil }

// Counts returns the statements the store has sent so far (zero unless
// Counted).
func (h *Harness) Counts() sqlstore.Counts {
	if h.counter == nil {
		return sqlstore.Counts{}
	}
	return h.counter.Read()
}

// Runtime returns the runtime of the node in this process (nil across
// processes).
func (h *Harness) Runtime() *agent.Runtime {
	if h.node == nil {
		return nil
	}
	return h.node.Runtime()
}

// watchers is how many watchers poll the store: one per process that
// executes runs.
func (h *Harness) watchers() int {
	if h.procs != nil {
		return len(h.procs.workers)
	}
	return 1
}

// submit creates a run: through the runtime in process, through the API
// across processes.
func (h *Harness) submit(ctx context.Context, req *agent.Request) (string, error) {
	if h.procs != nil {
		return h.procs.submit(ctx, req)
	}
	run, err := h.node.Runtime().Submit(ctx, "load", req)
	if err != nil {
		return "", err
	}
	return run.ID, nil
}

// cancel cancels a run and returns how long the cancel took: until
// Runtime.Cancel returned in process, the API's took_ms across processes.
func (h *Harness) cancel(ctx context.Context, id string) (time.Duration, error) {
	if h.procs != nil {
		return h.procs.cancel(ctx, id)
	}
	t0 := time.Now()
	err := h.node.Runtime().Cancel(ctx, actor, id)
	return time.Since(t0), err
}

// Held is a run holding a call of the slow tool on the MCP server.
type Held struct {
	RunID string
	tag   string
}

// holdScript is a run's script: one slow call, tagged so that the
// server's records name it, then an answer.
func holdScript(tag string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"steps":[{"tool_calls":[{"name":"mcp_load_slow","arguments":{"ms":%d,"tag":%q}}]},{"text":"done"}]}`,
		holdTimeout.Milliseconds(), tag))
}

// Hold submits n runs and returns once the server has started every one's
// slow call: n more runs in flight.
func (h *Harness) Hold(ctx context.Context, n int) ([]*Held, error) {
	ctx, done := h.guard(ctx)
	defer done()
	held := make([]*Held, n)
	for i := range held {
		tag := randomTag()
		id, err := h.submit(ctx, &agent.Request{Prompt: "hold", Model: "script", Script: holdScript(tag)})
		if err != nil {
			return nil, fmt.Errorf("loadtest: submitting run %d of %d: %w", i+1, n, err)
		}
		held[i] = &Held{RunID: id, tag: tag}
	}
	for _, hd := range held {
		if err := h.waitStarted(ctx, hd); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// waitStarted waits until the server has started hd's call, and fails if
// the run ends first (it will never start it).
func (h *Harness) waitStarted(ctx context.Context, hd *Held) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		err := h.calls.waitStarted(wctx, hd.tag)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		run, rerr := h.probe.RunGet(ctx, hd.RunID)
		if rerr != nil {
			return rerr
		}
		if run.Status.Terminal() {
			return fmt.Errorf("loadtest: run %s ended %s (%s: %s) before the server started its call (-v logs why)",
				hd.RunID, run.Status, run.Reason, run.Error)
		}
	}
}

func randomTag() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
