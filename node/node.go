package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/gateway"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
	"go.opentelemetry.io/otel/trace"
)

// AuditKeyLabel labels the key the audit log is chained with, derived from
// the vault ([vault.Vault.DeriveKey]). It must never change: every process
// and command that writes or verifies the log derives the same key.
const AuditKeyLabel = "audit hmac v1"

// ErrInvalidConfig reports a [Config] that New refuses before it opens or
// starts anything.
var ErrInvalidConfig = errors.New("node: invalid config")

// Config configures a [Node]. Store or DB and Key are required; every other
// field says what its zero value means.
type Config struct {
	// Store is the database, open: the caller closes it, after the node.
	// Set Store or DB, not both.
	Store Store
	// DB is the database that New opens (creating and migrating it if
	// needed) and Close closes: the path of a SQLite file, or a
	// PostgreSQL URL (postgres://…) that many processes may share.
	DB string
	// Key is the master key: the vault's, and, derived from it, the audit
	// chain's. Required; every process on one database must use the same.
	Key vault.Key

	// Servers are the MCP servers whose tools runs may call. Nil: none.
	Servers *catalogue.Config
	// Dial, if set, reaches each server instead of the default (a
	// subprocess for a command; for a URL, an HTTP client through egress,
	// see [MCPHTTPClient]): a server in the embedding program, say. See
	// [catalogue.Options].Dial.
	Dial func(ctx context.Context, s catalogue.Server) (mcp.Transport, error)
	// Egress is what every outbound HTTP request of the node shares —
	// the MCP servers' over HTTP and the OpenAI model's: hosts allowed
	// beyond each one's own, a Resolver, TLS settings. Its Purpose,
	// Credential, Audit, Secrets and Logger are the node's.
	Egress egress.Config

	// NewModel returns a run's model. Nil means the script model
	// (model/script) for the models "" and "script".
	NewModel func(ctx context.Context, req *agent.Request) (model.Model, error)
	// OpenAI, if set, makes the model "openai" (and "openai:NAME")
	// available to runs; others go to NewModel.
	OpenAI *OpenAI

	// Workers is how many runs the node executes at once. Zero means
	// agent.DefaultMaxConcurrentRuns.
	Workers int
	// APIOnly makes a node that executes nothing: [Node.Run] works only
	// the watcher (the cancels made here still reach the workers), and an
	// approved run is handed back to the queue for the workers on the
	// same database.
	APIOnly bool
	// WatchInterval is how often the watcher polls for runs cancelled
	// elsewhere (the backstop). Zero means agent.DefaultWatchInterval.
	WatchInterval time.Duration
	// LeaseDuration is how long a run's claim holds without renewal.
	// Zero means agent.DefaultLeaseDuration.
	LeaseDuration time.Duration
	// ReapInterval is how often to look for runs whose worker died. Zero
	// means agent.DefaultReapInterval.
	ReapInterval time.Duration
	// NoNotify, on PostgreSQL, leaves the cancels made elsewhere to River
	// and the watcher's poll: no NOTIFY is sent, no LISTEN made.
	NoNotify bool
	// AllowedHosts are the names, besides loopback's, that requests may
	// reach the node's API by (its Host header): see
	// [api.Config].AllowedHosts. Nil: loopback names only.
	AllowedHosts []string

	// MaxRounds, MaxCallsPerTurn and MaxCallsPerRun bound every run the
	// node executes: model turns, tool calls one turn may ask for, tool
	// calls in all (see [agent.Config]). Zero means the agent's default.
	MaxRounds, MaxCallsPerTurn, MaxCallsPerRun int

	// Logger receives the node's diagnostics. Nil means discard them.
	Logger *slog.Logger

	// TracerProvider, if set, traces the node: runs, model turns, tool
	// calls and cancels (see [agent.Config].TracerProvider), every MCP
	// request, with its trace context sent to the server (see
	// [mcp.ClientOptions].TracerProvider), and every outbound HTTP
	// request. Nil means no tracing, at no cost; the tracing package
	// makes one from the OTEL_* environment.
	TracerProvider trace.TracerProvider
}

// Node is an assembled andon process: see the package doc. Run it with
// [Node.Run], serve [Node.Handler], and Close it when done.
type Node struct {
	store      Store
	closeStore func() error // nil: the caller's store
	vault      *vault.Vault
	audit      *audit.Log
	cat        *catalogue.Catalogue
	rt         *agent.Runtime
	gw         *gateway.Gateway
	metrics    *metrics.Metrics
	handler    http.Handler
	bus        cancelBus // nil: none, or NoNotify
	announce   *announcer
	apiOnly    bool
	logger     *slog.Logger

	endStreams func() // the API's event streams end
	closeOnce  sync.Once
}

// New opens the store (if Config.DB) and builds the node on it; nothing runs
// until [Node.Run]. It fails with [ErrInvalidConfig] for a config it
// refuses, and with the store's error if the database cannot be opened or
// the key does not fit it.
func New(ctx context.Context, cfg *Config) (_ *Node, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	streams := make(chan struct{})
	n := &Node{store: cfg.Store, apiOnly: cfg.APIOnly, logger: logger,
		endStreams: sync.OnceFunc(func() { close(streams) })}
	if n.store == nil {
		st, err := openStore(ctx, cfg.DB, sqlstore.OpenLogger(logger))
		if err != nil {
			return nil, err
		}
		n.store, n.closeStore = st, st.Close
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	n.vault = vault.New(n.store, cfg.Key)
	key, err := n.vault.DeriveKey(ctx, AuditKeyLabel)
	if err != nil {
		return nil, err
	}
	n.audit = audit.New(n.store, key)
	if b, ok := n.store.Notifier(); ok && !cfg.NoNotify {
		n.bus = b
	}
	n.metrics = metrics.New(logger)
	n.announce = newAnnouncer(n.store, n.bus, func(runID string) bool { return n.rt.Watcher().Watches(runID) }, logger)
	ecfg := cfg.Egress
	ecfg.Audit, ecfg.Secrets, ecfg.Logger = n.audit, n.vault, logger
	if n.cat, err = catalogue.New(cfg.Servers, &catalogue.Options{
		Dial:       cfg.Dial,
		HTTPClient: MCPHTTPClient(ecfg),
		Logger:     logger,
		Settings:   n.store, // operators' tool settings, applied by every process
		Client:     &mcp.ClientOptions{OnCancelSent: n.metrics.CancelSent, TracerProvider: cfg.TracerProvider},
		OnCall:     n.metrics.ToolCall,
		OnCancelOutcome: func(server string, o mcp.CancelOutcome) {
			n.metrics.CancelOutcome(server, string(o))
		},
		Audit:    n.audit, // one row per tool call, stdio's too
		OnImport: n.metrics.ServerImport,
		// A server's question during a run goes to the run's operator.
		Elicitation: true,
	}); err != nil {
		return nil, err
	}
	newModel := cfg.NewModel
	if newModel == nil {
		newModel = scriptModel
	}
	ms, err := newModels(ctx, newModel, cfg.OpenAI, ecfg, n.vault)
	if err != nil {
		return nil, err
	}
	if n.rt, err = agent.New(cfg.runtime(n, ms.newModel)); err != nil {
		return nil, err
	}
	if err := n.metrics.CountWatcherReads(n.rt.Watcher()); err != nil {
		return nil, err
	}
	// The gateway: the catalogue's tools for any MCP client, on /mcp and
	// (andon gateway --stdio) on stdio, each call a run of this runtime.
	n.gw = gateway.New(n.cat, n.rt, &gateway.Options{
		Owner:  func(ctx context.Context, _ *mcp.Peer) string { return api.ActorFrom(ctx).ID },
		OnCall: func(server string, o gateway.Outcome) { n.metrics.GatewayCall(server, string(o)) },
		Logger: logger,
	})
	acfg := api.Config{Runtime: n.rt, MCP: n.gw, Store: n.store, Audit: n.audit, Tokens: n.store,
		Catalogue: n.cat, Metrics: n.metrics, Logger: logger, Stop: streams, Inputs: n.store, AllowedHosts: cfg.AllowedHosts,
		Connect: &api.Connect{Setup: catalogue.OAuthSetup{Egress: ecfg, Vault: n.vault}, Server: n.cat.Server}}
	if tc, ok := n.store.TokenCanceller(); ok {
		acfg.TokenCancel = tc // one round trip per cancel (PostgreSQL)
	}
	if n.handler, err = api.NewHandler(acfg); err != nil {
		return nil, err
	}
	return n, nil
}

func (cfg *Config) check() error {
	switch {
	case cfg == nil:
		return fmt.Errorf("%w: no config", ErrInvalidConfig)
	case cfg.Store == nil && cfg.DB == "":
		return fmt.Errorf("%w: neither Store nor DB is set", ErrInvalidConfig)
	case cfg.Store != nil && cfg.DB != "":
		return fmt.Errorf("%w: both Store and DB are set", ErrInvalidConfig)
	case cfg.Key.IsZero():
		return fmt.Errorf("%w: Key is required", ErrInvalidConfig)
	case cfg.Workers < 0:
		return fmt.Errorf("%w: Workers %d: want 0 (the default) or more", ErrInvalidConfig, cfg.Workers)
	case cfg.MaxRounds < 0 || cfg.MaxCallsPerTurn < 0 || cfg.MaxCallsPerRun < 0:
		return fmt.Errorf("%w: MaxRounds, MaxCallsPerTurn and MaxCallsPerRun want 0 (the default) or more", ErrInvalidConfig)
	case cfg.OpenAI != nil:
		return cfg.OpenAI.check()
	}
	return nil
}

// runtime is the runtime's configuration. Runs are River jobs; River may
// take a job's worker for dead (and rescue the job) only well after the
// longest run could have ended, since the run's lease is what notices a
// dead worker first: the reaper then decides whether it may be retried.
func (cfg *Config) runtime(n *Node, newModel func(context.Context, *agent.Request) (model.Model, error)) agent.Config {
	lease := cfg.LeaseDuration
	if lease == 0 {
		lease = agent.DefaultLeaseDuration
	}
	rc := agent.Config{
		Store:             n.store,
		Tools:             n.cat,
		NewModel:          newModel,
		WatchInterval:     cfg.WatchInterval,
		MaxConcurrentRuns: cfg.Workers,
		MaxRounds:         cfg.MaxRounds,
		MaxCallsPerTurn:   cfg.MaxCallsPerTurn,
		MaxCallsPerRun:    cfg.MaxCallsPerRun,
		LeaseDuration:     lease,
		ReapInterval:      cfg.ReapInterval,
		// A node that executes nothing hands approved runs to the workers.
		ResumeElsewhere: cfg.APIOnly,
		OnCancel:        n.announce.onCancel,
		Audit:           n.audit, // every decision on a tool call is an audit row
		Inputs:          n.store, // servers' questions to operators, answered from any process
		Logger:          n.logger,
		TracerProvider:  cfg.TracerProvider,
	}
	if !cfg.APIOnly {
		rc.Queue = n.store.Queue(sqlstore.QueueOptions{
			RescueAfter: agent.DefaultMaxRunTime + 2*lease,
			// River's info lines (a producer's job counts every few
			// seconds) would flood an operator's terminal.
			Logger: quieter(n.logger, slog.LevelWarn),
		})
	}
	return rc
}

// Run executes runs until ctx ends: it works the River queue, the watcher
// and the reaper — with APIOnly, the watcher alone — and, on a store that
// has LISTEN/NOTIFY, a listener that hands every cancel announced by any
// process to the watcher as a hint. It returns once all of them have
// stopped, with why: ctx's cause if ctx ended, else the error that stopped
// the queue. The API's event streams end when Run does. Call Run once.
func (n *Node) Run(ctx context.Context) error {
	stopped := ctx
	var wg sync.WaitGroup
	defer wg.Wait() // after stop, below: the listener ends with ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Streams end as soon as the node stops, not when Run has returned:
	// the runs in flight may take a moment to stop.
	context.AfterFunc(ctx, n.endStreams)
	defer n.endStreams()
	if n.bus != nil {
		wg.Go(func() { listenCancels(ctx, n.bus, n.rt.Watcher(), n.logger) })
	}
	wg.Go(func() { n.gw.Run(ctx) })
	var err error
	if n.apiOnly {
		// Claim nothing, and hand approved runs back to the queue
		// (Config.ResumeElsewhere). The watcher still polls, which
		// costs nothing while nothing is watched. The cancels recorded
		// here reach the MCP tasks of runs whose worker died: the task
		// reaper is their backstop (agent.Runtime.ReapTasks).
		wg.Go(func() { n.rt.RunTaskReaper(ctx) })
		n.rt.Watcher().Run(ctx)
	} else {
		// The servers' handshakes start now, not with the first run:
		// that run finds the servers that answer imported already.
		n.cat.Prefetch(ctx)
		err = n.rt.Run(ctx)
	}
	if stopped.Err() != nil {
		return context.Cause(stopped)
	}
	if err == nil {
		err = errors.New("it stopped on its own")
	}
	return fmt.Errorf("node: executing runs: %w", err)
}

// Handler returns the JSON API and the web console, authenticated by the
// store's API tokens (see package api). Its event streams end when Run
// returns or Close is called, so that an http.Server's Shutdown, which
// waits for every request, does not wait for them.
func (n *Node) Handler() http.Handler { return n.handler }

// Gateway returns the MCP gateway: the catalogue's tools served to MCP
// clients, each call a run of the node's runtime. Handler serves it on
// /mcp; serve it on stdio with its ServeStream.
func (n *Node) Gateway() *gateway.Gateway { return n.gw }

// Runtime returns the runtime: submit, cancel, approve runs.
func (n *Node) Runtime() *agent.Runtime { return n.rt }

// Store returns the node's store.
func (n *Node) Store() Store { return n.store }

// Audit returns the audit log.
func (n *Node) Audit() *audit.Log { return n.audit }

// Metrics returns the process's metrics, fed by the catalogue, its clients
// and the watcher; Handler serves them too, on GET /metrics.
func (n *Node) Metrics() *metrics.Metrics { return n.metrics }

// Close ends the API's event streams, stops what Approve or Deny resumed
// outside Run, closes the MCP clients and, if New opened it, the store.
// Call it after Run has returned; calls after the first do nothing.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		n.endStreams()
		if n.gw != nil {
			n.gw.Close() // its calls cancelled while the runtime can still tell their servers
		}
		if n.rt != nil {
			n.rt.Close()
		}
		if n.announce != nil {
			n.announce.close()
		}
		if n.cat != nil {
			n.cat.Close()
		}
		if n.closeStore != nil {
			_ = n.closeStore()
		}
	})
}
