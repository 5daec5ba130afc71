// Package metrics holds one andon process's Prometheus metrics: the tool
// calls it made, how fast their cancellations reached the wire, the cancel
// watcher's store reads, the API's refusals, the failed imports of servers'
// tools, and the runs by status. A process that serves no API (andon
// worker) has them too, so they are not the API's.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

// Metrics are one process's Prometheus metrics, on a registry of their own
// (nothing is registered globally):
//
//	andon_tool_calls_total{server,outcome}            counter
//	andon_tool_call_duration_seconds{server,outcome}  histogram
//	andon_cancel_to_wire_seconds{transport}           histogram
//	andon_cancel_outcomes_total{server,outcome}       counter: what became of cancelled calls
//	andon_gateway_calls_total{server,outcome}         counter: calls MCP clients made through the gateway
//	andon_watcher_store_reads_total{read}             counter: read is poll or watch (fresh)
//	andon_api_denied_total{status,reason}             counter: every request the API refused
//	andon_server_import_failures_total{server}        counter
//	andon_runs{status}                                gauge, on the API's /metrics only
//
// plus the Go runtime's and the process's own (go_*, process_*). outcome is
// an [agent.Outcome] (ok, error, failed, cancelled) or timeout; a call the
// runtime never made (denied by an operator, an unknown tool) is not a
// tool call here. transport is stdio, http or sse (see mcp.CancelSentFunc).
// andon_api_denied_total counts each refusal (401 or 403, by its fixed
// reason), also those the audit log coalesces into one row.
//
// The process feeds them through hooks: [Metrics.ToolCall] is a
// [catalogue.Options] OnCall, [Metrics.ServerImport] its OnImport,
// [Metrics.CancelSent] an mcp.ClientOptions
// OnCancelSent, [Metrics.CancelOutcome] its OnCancelOutcome, and [Metrics.CountWatcherReads] reads a watcher's count at
// scrape time. andon_runs is read from the store at each scrape, in one
// query, only by [Metrics.HandlerWithRuns], the API's GET /metrics, since
// every process on a database would report the same numbers.
type Metrics struct {
	reg          *prometheus.Registry
	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	cancelToWire *prometheus.HistogramVec
	cancelOuts   *prometheus.CounterVec
	gatewayCalls *prometheus.CounterVec
	apiDenied    *prometheus.CounterVec
	importFails  *prometheus.CounterVec
	logger       *slog.Logger
}

// New returns a process's metrics. A nil logger discards.
func New(logger *slog.Logger) *Metrics {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Buckets, in seconds: tool calls run from milliseconds to minutes; a
	// cancel reaches the wire in well under a millisecond on stdio and in
	// a few on HTTP.
	callBuckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	cancelBuckets := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		logger: logger,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "andon_tool_calls_total",
			Help: "Tool calls made to MCP servers, by server and outcome (ok, error, failed, cancelled, timeout).",
		}, []string{"server", "outcome"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "andon_tool_call_duration_seconds",
			Help:    "How long tool calls took, reconnection included, by server and outcome.",
			Buckets: callBuckets,
		}, []string{"server", "outcome"}),
		cancelToWire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "andon_cancel_to_wire_seconds",
			Help:    "From a call's context ending to its cancellation being on the wire (notification written or POSTed, or response stream closed), by transport.",
			Buckets: cancelBuckets,
		}, []string{"transport"}),
		cancelOuts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "andon_cancel_outcomes_total",
			Help: "What became of tool calls after their cancel went out, by server: confirmed (the stdio server exited), completed_anyway (a result came after the cancel: the server did not stop), unconfirmed (nothing was heard).",
		}, []string{"server", "outcome"}),
		gatewayCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "andon_gateway_calls_total",
			Help: "Tool calls MCP clients made through the gateway, by server and how they ended (ok, error, client: the client cancelled or went away, operator: an operator stopped it, denied, failed).",
		}, []string{"server", "outcome"}),
		apiDenied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "andon_api_denied_total",
			Help: "Requests the API refused, by status (401, 403) and reason; every one, also those the audit log counts in one row.",
		}, []string{"status", "reason"}),
		importFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "andon_server_import_failures_total",
			Help: "Imports of an MCP server's tools that failed (the server is left out of runs' tool lists until one succeeds), by server.",
		}, []string{"server"}),
	}
	m.reg.MustRegister(m.calls, m.callSeconds, m.cancelToWire, m.cancelOuts, m.gatewayCalls, m.apiDenied, m.importFails,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ToolCall counts a tool call; it is a [catalogue.Options] OnCall.
func (m *Metrics) ToolCall(r catalogue.CallReport) {
	outcome := string(r.Outcome)
	if r.TimedOut {
		outcome = "timeout"
	}
	m.calls.WithLabelValues(r.Server, outcome).Inc()
	m.callSeconds.WithLabelValues(r.Server, outcome).Observe(r.Took.Seconds())
}

// ServerImport counts a failed import of a server's tools; it is a
// [catalogue.Options] OnImport.
func (m *Metrics) ServerImport(server string, err error) {
	if err != nil {
		m.importFails.WithLabelValues(server).Inc()
	}
}

// CancelSent records how long a cancellation took to reach the wire; it is
// an mcp.ClientOptions OnCancelSent.
func (m *Metrics) CancelSent(transport string, d time.Duration) {
	m.cancelToWire.WithLabelValues(transport).Observe(d.Seconds())
}

// CancelOutcome counts what became of a cancelled call of server's: the
// catalogue's OnCancelOutcome, outcome being an mcp.CancelOutcome
// (confirmed, completed_anyway, unconfirmed), so that an operator can see
// which servers honour a stop.
func (m *Metrics) CancelOutcome(server, outcome string) {
	m.cancelOuts.WithLabelValues(server, outcome).Inc()
}

// GatewayCall counts a tool call an MCP client made through the gateway:
// the gateway's OnCall, outcome being a gateway.Outcome.
func (m *Metrics) GatewayCall(server, outcome string) {
	m.gatewayCalls.WithLabelValues(server, outcome).Inc()
}

// Denied counts a request the API refused with status (401 or 403).
// reason must be one of a small, fixed set of literals, never anything a
// client sent, so the label set stays small.
func (m *Metrics) Denied(status int, reason string) {
	m.apiDenied.WithLabelValues(strconv.Itoa(status), reason).Inc()
}

// CountWatcherReads exports w's store reads (see [agent.Watcher.StoreReads])
// as andon_watcher_store_reads_total. Call it once per watcher.
func (m *Metrics) CountWatcherReads(w *agent.Watcher) error {
	for _, read := range []string{"poll", "watch"} {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "andon_watcher_store_reads_total",
			Help:        "Run-status reads the cancel watcher made: one per poll however many calls are in flight (read=poll), one fresh read per watched call that no guarded write reads for (a claim, a write fence) and per read of the runs hinted at by other processes (read=watch).",
			ConstLabels: prometheus.Labels{"read": read},
		}, func() float64 {
			polls, fresh := w.StoreReads()
			if read == "poll" {
				return float64(polls)
			}
			return float64(fresh)
		})
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("metrics: exporting the watcher's reads: %w", err)
		}
	}
	return nil
}

// Handler serves the metrics in the Prometheus text format, without
// andon_runs: an andon worker serves it on its --metrics-addr.
func (m *Metrics) Handler() http.Handler { return m.HandlerWithRuns(nil) }

// RunCounter counts runs by status in one query; the sqlstore stores
// implement it.
type RunCounter interface {
	RunCountByStatus(ctx context.Context) (map[agent.Status]int64, error)
}

// runsTimeout bounds the store query of one scrape.
const runsTimeout = 5 * time.Second

// HandlerWithRuns serves the metrics and, if runs is not nil, andon_runs
// read from it for each scrape: the API's GET /metrics. If the store cannot
// be read, the scrape still serves everything else, and the failure is
// logged.
func (m *Metrics) HandlerWithRuns(runs RunCounter) http.Handler {
	opts := promhttp.HandlerOpts{ErrorLog: promLogger{m.logger}, ErrorHandling: promhttp.ContinueOnError}
	if runs == nil {
		return promhttp.HandlerFor(m.reg, opts)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := prometheus.Gatherers{m.reg}
		ctx, cancel := context.WithTimeout(r.Context(), runsTimeout)
		counts, err := runs.RunCountByStatus(ctx)
		cancel()
		if err != nil {
			m.logger.Warn("metrics: counting runs for /metrics failed; andon_runs is left out of this scrape", "error", err)
		} else {
			g = append(g, runsGauge(counts))
		}
		promhttp.HandlerFor(g, opts).ServeHTTP(w, r)
	})
}

// statuses are the statuses andon_runs always has a series for.
var statuses = []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval,
	agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled}

// runsGauge is a registry holding andon_runs for one scrape: every status,
// zero when no run is in it.
func runsGauge(counts map[agent.Status]int64) *prometheus.Registry {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "andon_runs",
		Help: "Runs in the database, by status, read at scrape time.",
	}, []string{"status"})
	for _, st := range statuses {
		gauge.WithLabelValues(string(st)).Set(float64(counts[st]))
	}
	for st, n := range counts {
		gauge.WithLabelValues(string(st)).Set(float64(n)) // a status this build does not list
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(gauge)
	return reg
}

// promLogger hands promhttp's errors to slog.
type promLogger struct{ l *slog.Logger }

func (p promLogger) Println(v ...any) { p.l.Warn("metrics: serving /metrics: " + fmt.Sprint(v...)) }
