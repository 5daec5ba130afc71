package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
)

// TestListAudit: GET /v1/audit returns rows newest first, filtered by run
// and by action, a page at a time (next_before), and refuses a bad limit
// or before.
func TestListAudit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, audit: true})
	ctx := context.Background()
	for i, e := range []audit.Entry{
		{Action: audit.ActionHTTPCall, RunID: "run_a", Method: "GET", Host: "h", Path: "/1", Status: 200, OK: true, Reason: "completed"},
		{Action: audit.ActionHTTPCallCancelled, RunID: "run_a", Method: "POST", Host: "h", Path: "/2", Reason: "cancelled"},
		{Action: audit.ActionHTTPCall, RunID: "run_b", Method: "GET", Host: "h", Path: "/3", Status: 200, OK: true, Reason: "completed"},
		{Action: audit.ActionHTTPCallCancelledBeforeSend, RunID: "run_a", Method: "GET", Host: "h", Path: "/4", Reason: "cancelled"},
		{Action: audit.ActionAPIDenied, Purpose: "api (no token)", Method: "GET", Path: "/v1/runs", Status: 401, Reason: "no token"},
	} {
		if _, err := f.audit.Record(ctx, e); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	paths := func(p *api.AuditPage) []string {
		var out []string
		for _, r := range p.Audit {
			out = append(out, r.Path)
		}
		return out
	}
	for _, c := range []struct {
		q        api.AuditQuery
		want     []string
		nextFrom int64
	}{
		{api.AuditQuery{}, []string{"/v1/runs", "/4", "/3", "/2", "/1"}, 0},
		{api.AuditQuery{RunID: "run_a"}, []string{"/4", "/2", "/1"}, 0},
		{api.AuditQuery{Action: string(audit.ActionHTTPCall)}, []string{"/3", "/1"}, 0},
		{api.AuditQuery{RunID: "run_a", Action: string(audit.ActionHTTPCall)}, []string{"/1"}, 0},
		{api.AuditQuery{Limit: 2}, []string{"/v1/runs", "/4"}, 4},
		{api.AuditQuery{Limit: 2, Before: 4}, []string{"/3", "/2"}, 2},
		{api.AuditQuery{Limit: 2, Before: 2}, []string{"/1"}, 0},
		{api.AuditQuery{RunID: "run_nope"}, nil, 0},
	} {
		page, err := f.client.ListAudit(ctx, c.q)
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		if got := paths(page); !equalStrings(got, c.want) || page.NextBefore != c.nextFrom {
			t.Errorf("%+v: rows %v next_before %d, want %v and %d", c.q, got, page.NextBefore, c.want, c.nextFrom)
		}
	}
	page, _ := f.client.ListAudit(ctx, api.AuditQuery{Action: string(audit.ActionHTTPCallCancelled)})
	if r := page.Audit[0]; r.RunID != "run_a" || !r.Sent || r.Method != "POST" || r.Host != "h" {
		t.Errorf("a cancelled-in-flight row: %+v, want its run, sent true", r)
	}
	page, _ = f.client.ListAudit(ctx, api.AuditQuery{Action: string(audit.ActionHTTPCallCancelledBeforeSend)})
	if r := page.Audit[0]; r.Sent {
		t.Errorf("a cancelled-before-send row says sent: %+v", r)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "before=0", "before=-1", "before=x"} {
		status, header, body := f.raw("GET", "/v1/audit?"+q, "")
		checkError(t, status, header, body, http.StatusBadRequest, "bad_request")
	}
}

// TestListAuditWithoutALog: a server with no audit log lists no rows.
func TestListAuditWithoutALog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	page, err := f.client.ListAudit(context.Background(), api.AuditQuery{})
	if err != nil || len(page.Audit) != 0 {
		t.Fatalf("ListAudit = %+v, %v; want no rows", page, err)
	}
}

// TestReady: ready while the store answers, 503 unavailable when it does
// not — without a token, and without the store's words.
func TestReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	anon := f.as("")
	if err := anon.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	f.store.fail.Store(true)
	status, header, body := f.raw("GET", "/v1/ready", "")
	checkError(t, status, header, body, http.StatusServiceUnavailable, "unavailable")
	if err := anon.Health(context.Background()); err != nil {
		t.Errorf("Health while the store fails: %v (health is the process only)", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
