package api

import (
	"net/http"
	"strconv"

	"github.com/andonhq/andon/audit"
)

// defaultAuditLimit is the page size of GET /v1/audit without a limit.
const defaultAuditLimit = 100

// AuditPage is a page of GET /v1/audit: rows newest first. NextBefore, if
// not zero, is the before of the next (older) page.
type AuditPage struct {
	Audit      []AuditRow `json:"audit"`
	NextBefore int64      `json:"next_before,omitempty"`
}

// listAudit is GET /v1/audit?run=&action=&limit=&before=: the audit rows,
// newest first, of one run and/or one action, a page at a time.
func (s *server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	aq := audit.Query{RunID: q.Get("run"), Action: audit.Action(q.Get("action")), Newest: true, Limit: defaultAuditLimit}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit must be a number from 1 to 1000")
			return
		}
		aq.Limit = n
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "bad_request", "before must be an audit row's seq (a number from 1)")
			return
		}
		aq.BeforeSeq = n
	}
	page := AuditPage{Audit: []AuditRow{}}
	if s.cfg.Audit != nil {
		rows, err := s.cfg.Audit.List(r.Context(), aq)
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, row := range rows {
			page.Audit = append(page.Audit, toAudit(row))
		}
		if len(rows) == aq.Limit {
			page.NextBefore = rows[len(rows)-1].Seq
		}
	}
	writeJSON(w, http.StatusOK, page)
}
