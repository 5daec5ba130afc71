package api

import (
	"net/http"

	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/token"
)

// routeMetrics serves GET /metrics: the process's metrics and andon_runs
// from the store. Role viewer: it shows counts, no run's content.
func (s *server) routeMetrics(mux *http.ServeMux) {
	runs, _ := s.cfg.Store.(metrics.RunCounter)
	s.route(mux, "GET /metrics", token.RoleViewer, s.cfg.Metrics.HandlerWithRuns(runs).ServeHTTP)
}
