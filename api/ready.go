package api

import (
	"context"
	"net/http"
	"time"

	"github.com/andonhq/andon/agent"
)

// readyTimeout bounds the store query of GET /v1/ready: a load balancer
// asking must get an answer, not a hung connection.
const readyTimeout = 2 * time.Second

// ready is GET /v1/ready: 200 if the store answers a cheap query (the
// newest run, by index), 503 unavailable if not. /v1/health says only that
// the process answers.
func (s *server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if _, err := s.cfg.Store.RunList(ctx, agent.RunFilter{Limit: 1}); err != nil {
		s.cfg.Logger.Warn("api: readiness: the store does not answer", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the store does not answer")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
