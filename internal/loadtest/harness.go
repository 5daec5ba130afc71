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
}

// Harness is one andon node on a counted store, with its MCP server, ready
// to hold runs and cancel them. Close it when done.
type Harness struct {
	cfg     Config
	counter *sqlstore.StatementCounter
	store   *sqlstore.Store
	probe   *sqlstore.Store // the harness's own reads, not counted
	node    *node.Node
	calls   *calls
	server  *httpServer // HTTP only

	stop    context.CancelFunc
	ended   chan struct{} // closed when the node's Run returned
	done    sync.WaitGroup
	runErr  error
	closeMu sync.Once
}

// MaxWorkers is the most runs a node executes at once: River's limit on
// one queue's workers, and so the most runs a harness can hold.
const MaxWorkers = 10_000

// holdTimeout bounds a slow call: longer than any measurement.
const holdTimeout = 30 * time.Minute

// Start opens the store, starts the MCP server (for HTTP) and a node
// working runs, and returns once the node runs.
func Start(ctx context.Context, cfg Config) (_ *Harness, err error) {
	if cfg.DB == "" || cfg.Dir == "" {
		return nil, errors.New("loadtest: Config.DB and Config.Dir are required")
	}
	if cfg.Transport == "" {
		cfg.Transport = Stdio
	}
	h := &Harness{cfg: cfg, counter: &sqlstore.StatementCounter{}, calls: newCalls(), ended: make(chan struct{})}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	record := filepath.Join(cfg.Dir, fmt.Sprintf("records-%s.jsonl", randomTag()))
	if err := os.WriteFile(record, nil, 0o600); err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	no := false
	server := catalogue.Server{Name: "load", RequiresApproval: &no}
	server.Budget.Timeout = holdTimeout
	switch cfg.Transport {
	case Stdio:
		if server.Command, err = serverCommand(record); err != nil {
			return nil, err
		}
		server.Env = map[string]string{ServeEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	case HTTP:
		if h.server, err = startHTTPServer(ctx, record); err != nil {
			return nil, err
		}
		server.URL = h.server.url
	default:
		return nil, fmt.Errorf("loadtest: unknown transport %q: want %q or %q", cfg.Transport, Stdio, HTTP)
	}
	if h.store, err = sqlstore.Open(ctx, cfg.DB, sqlstore.OpenCounter(h.counter), sqlstore.OpenLogger(cfg.Logger)); err != nil {
		return nil, err
	}
	if h.probe, err = sqlstore.Open(ctx, cfg.DB, sqlstore.OpenLogger(cfg.Logger)); err != nil {
		return nil, err
	}
	key, err := vault.NewKey()
	if err != nil {
		return nil, err
	}
	ncfg := &node.Config{Store: h.store, Key: key, Servers: &catalogue.Config{Servers: []catalogue.Server{server}},
		Workers: cfg.Workers, Logger: cfg.Logger}
	ncfg.Egress.AllowedHosts = []string{"127.0.0.1"}
	if h.node, err = node.New(ctx, ncfg); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h.stop = stop
	h.done.Add(2)
	go func() {
		defer h.done.Done()
		h.calls.follow(runCtx, record)
	}()
	go func() {
		defer h.done.Done()
		defer close(h.ended)
		if err := h.node.Run(runCtx); runCtx.Err() == nil {
			h.runErr = err
		}
	}()
	return h, nil
}

// Close stops the node and the MCP server and closes the store. It returns
// an error if the node stopped on its own before.
func (h *Harness) Close() error {
	h.closeMu.Do(func() {
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
		if h.server != nil {
			h.server.stop()
		}
	})
	return h.runErr
}

// errNodeStopped ends a wait when the node stopped on its own.
var errNodeStopped = errors.New("loadtest: the node stopped on its own (Close says why)")

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

// Store returns the harness's store.
func (h *Harness) Store() *sqlstore.Store { return h.store }

// Counts returns the statements the store has sent so far.
func (h *Harness) Counts() sqlstore.Counts { return h.counter.Read() }

// Runtime returns the node's runtime.
func (h *Harness) Runtime() *agent.Runtime { return h.node.Runtime() }

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
	rt := h.node.Runtime()
	for i := range held {
		tag := randomTag()
		run, err := rt.Submit(ctx, "load", &agent.Request{Prompt: "hold", Model: "script", Script: holdScript(tag)})
		if err != nil {
			return nil, fmt.Errorf("loadtest: submitting run %d of %d: %w", i+1, n, err)
		}
		held[i] = &Held{RunID: run.ID, tag: tag}
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
