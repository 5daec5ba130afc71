package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// request makes a request with the Authorization header auth (none if
// empty).
func (f *fixture) request(method, path, auth, body string) (int, http.Header, []byte) {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := f.http.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// denials returns the api_denied rows of the audit log, oldest first.
func (f *fixture) denials() []audit.Row {
	f.t.Helper()
	rows, err := f.audit.List(context.Background(), audit.Query{Action: audit.ActionAPIDenied})
	if err != nil {
		f.t.Fatal(err)
	}
	return rows
}

// checkSecretsAbsent fails if any secret appears in the audit log, in the
// logs, or in text.
func (f *fixture) checkSecretsAbsent(text string, secrets ...string) {
	f.t.Helper()
	rows, err := f.audit.List(context.Background(), audit.Query{})
	if err != nil {
		f.t.Fatal(err)
	}
	dump := fmt.Sprintf("%+v", rows) + f.logs.String() + text
	for _, s := range secrets {
		if strings.Contains(dump, s) || strings.Contains(dump, strings.TrimPrefix(s, "andon_")) {
			f.t.Errorf("a token's secret appears in the audit log, the logs or a response")
		}
	}
}

// TestRoutesByRole: each route answers each role as the role table says —
// the request is served, or refused with 403 forbidden and an audit row —
// and every route but health, readiness and the OpenAPI document refuses a
// request without a token with 401 unauthenticated.
func TestRoutesByRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	ctx := context.Background()
	secrets := map[token.Role]string{}
	for _, role := range []token.Role{token.RoleViewer, token.RoleOperator, token.RoleAdmin} {
		secrets[role] = f.token(string(role)+"-user", role)
	}
	// run makes a queued run owned by the caller, so that the owner rule
	// does not get in the way of the role check.
	run := func(owner string) string {
		r, err := f.rt.Submit(ctx, owner, &agent.Request{Prompt: "p", Script: json.RawMessage(finalScript)})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	routes := []struct {
		method, path string // {id}: a queued run of the caller's
		body         string
		least        token.Role // "": anyone
		served       int        // the status of a served request
	}{
		{"GET", "/v1/health", "", "", http.StatusOK},
		{"GET", "/v1/ready", "", "", http.StatusOK},
		{"GET", "/v1/openapi.json", "", "", http.StatusOK},
		{"GET", "/v1/runs", "", token.RoleViewer, http.StatusOK},
		{"GET", "/v1/runs/{id}", "", token.RoleViewer, http.StatusOK},
		{"GET", "/v1/audit", "", token.RoleViewer, http.StatusOK},
		{"GET", "/v1/whoami", "", token.RoleViewer, http.StatusOK},
		{"POST", "/v1/runs", `{"prompt":"p","script":` + finalScript + `}`, token.RoleOperator, http.StatusCreated},
		{"POST", "/v1/runs/{id}/cancel", "", token.RoleOperator, http.StatusOK},
		// A queued run is not waiting: served means the role and owner
		// checks passed and the runtime said conflict.
		{"POST", "/v1/runs/{id}/approve", "", token.RoleOperator, http.StatusConflict},
		{"POST", "/v1/runs/{id}/deny", "", token.RoleOperator, http.StatusConflict},
	}
	wantDenied := 0
	for _, rt := range routes {
		for _, role := range []token.Role{"", token.RoleViewer, token.RoleOperator, token.RoleAdmin} {
			name := string(role) + "-user"
			path := strings.ReplaceAll(rt.path, "{id}", run(name))
			auth := ""
			if role != "" {
				auth = "Bearer " + secrets[role]
			}
			status, header, body := f.request(rt.method, path, auth, rt.body)
			f.checkSecretsAbsent(string(body)+fmt.Sprint(header), secrets[token.RoleViewer], secrets[token.RoleOperator], secrets[token.RoleAdmin])
			switch {
			case rt.least == "":
				if status != rt.served {
					t.Errorf("%s %s as %q: status %d, want %d; %s", rt.method, rt.path, role, status, rt.served, body)
				}
			case role == "":
				wantDenied++
				checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
				if got := header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("%s %s without a token: WWW-Authenticate %q, want Bearer", rt.method, rt.path, got)
				}
			case rank(role) < rank(rt.least):
				wantDenied++
				checkError(t, status, header, body, http.StatusForbidden, "forbidden")
			default:
				if status != rt.served {
					t.Errorf("%s %s as %s: status %d, want %d; %s", rt.method, rt.path, role, status, rt.served, body)
				}
			}
		}
	}
	rows := f.denials()
	if len(rows) != wantDenied {
		t.Fatalf("%d api_denied rows, want one per denied request, %d", len(rows), wantDenied)
	}
	for _, r := range rows {
		if r.Method == "" || !strings.HasPrefix(r.Path, "/v1/") || (r.Status != 401 && r.Status != 403) || r.OK || r.Reason == "" {
			t.Errorf("denial row %+v: want method, path, status 401 or 403, not ok, a reason", r.Entry)
		}
		if r.Status == 403 && (r.Reason != "role viewer below operator" || !strings.Contains(r.Purpose, "(viewer-user, viewer)")) {
			t.Errorf("403 row %+v, want the viewer's token and the role as the reason", r.Entry)
		}
		if r.Status == 401 && (r.Reason != "no token" || r.Purpose != "api (no token)") {
			t.Errorf("401 row %+v, want reason no token", r.Entry)
		}
	}
}

func rank(r token.Role) int {
	return map[token.Role]int{token.RoleViewer: 1, token.RoleOperator: 2, token.RoleAdmin: 3}[r]
}

// TestBadTokens: a missing, malformed, unknown or revoked token gets 401
// unauthenticated with WWW-Authenticate: Bearer, and the first of each
// cause leaves an api_denied row saying why, naming the token if it was a
// real one (a bad one as such), and never holding the secret.
func TestBadTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	ctx := context.Background()
	revoked := f.token("carol", token.RoleAdmin)
	tokens, err := f.sqlite.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	carol := tokens[len(tokens)-1]
	if err := f.sqlite.TokenRevoke(ctx, carol.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	unknown, _, err := token.New("dave", token.RoleAdmin, time.Now()) // never stored
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		auth, reason, purpose string
	}{
		{"", "no token", "api (no token)"},
		{"Bearer", "not a bearer token", "api (bad token)"},
		{"Bearer ", "not a bearer token", "api (bad token)"},
		{"Basic " + revoked, "not a bearer token", "api (bad token)"},
		{revoked, "not a bearer token", "api (bad token)"},
		{"Bearer garbage", "unknown token", "api (bad token)"},
		{"Bearer " + unknown, "unknown token", "api (bad token)"},
		{"Bearer " + revoked + "x", "unknown token", "api (bad token)"},
		{"Bearer " + revoked, "revoked token", "api token " + carol.ID + " (carol, admin)"},
		{"bearer " + revoked, "revoked token", "api token " + carol.ID + " (carol, admin)"},
	}
	for _, c := range cases {
		status, header, body := f.request("GET", "/v1/runs?status=queued", c.auth, "")
		checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
		if got := header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("Authorization %q: WWW-Authenticate %q, want Bearer", c.auth, got)
		}
		f.checkSecretsAbsent(string(body), revoked, unknown)
	}
	// One row per cause (reason, and token if any) within the interval:
	// the first request's.
	var want []audit.Entry
	seen := map[string]bool{}
	for _, c := range cases {
		if !seen[c.reason] {
			seen[c.reason] = true
			want = append(want, audit.Entry{Action: audit.ActionAPIDenied, Purpose: c.purpose, Method: "GET",
				Path: "/v1/runs", Status: http.StatusUnauthorized, Reason: c.reason})
		}
	}
	rows := f.denials()
	if len(rows) != len(want) {
		t.Fatalf("%d api_denied rows, want %d: one per cause", len(rows), len(want))
	}
	for i := range want {
		want[i].Time = rows[i].Time
		if rows[i].Entry != want[i] {
			t.Errorf("row %+v, want %+v", rows[i].Entry, want[i])
		}
	}
	// The client says so too.
	_, err = f.as(revoked).ListRuns(ctx, agent.RunFilter{})
	checkAPIError(t, err, http.StatusUnauthorized, "unauthenticated")
	if strings.Contains(err.Error(), revoked) {
		t.Error("the client's error holds the token")
	}
	f.checkSecretsAbsent(err.Error(), revoked, unknown)
	// A revoked token stays revoked; a valid one works.
	if _, err := f.client.ListRuns(ctx, agent.RunFilter{}); err != nil {
		t.Errorf("the admin's valid token: %v", err)
	}
}

// TestOwnerRule: an operator may cancel, approve and deny its own runs and
// nobody else's; the refusal is 403 forbidden with an audit row naming the
// run; an admin may act on anyone's run.
func TestOwnerRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	ctx := context.Background()
	alice := f.as(f.token("alice", token.RoleOperator))
	bob := f.as(f.token("bob", token.RoleOperator))
	bobs, err := bob.CreateRun(ctx, &agent.Request{Prompt: "bob's", Script: json.RawMessage(finalScript)})
	if err != nil {
		t.Fatal(err)
	}
	if bobs.Owner != "bob" {
		t.Fatalf("a run made with bob's token is owned by %q, want bob", bobs.Owner)
	}
	_, err = alice.CancelRun(ctx, bobs.ID)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	_, err = alice.Decide(ctx, bobs.ID, true)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	_, err = alice.Decide(ctx, bobs.ID, false)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	if d, _ := bob.GetRun(ctx, bobs.ID); d.Run.Status != "queued" {
		t.Fatalf("bob's run is %s after alice's refused cancel, want queued", d.Run.Status)
	}
	rows := f.denials()
	if len(rows) != 3 {
		t.Fatalf("%d api_denied rows, want 3", len(rows))
	}
	for i, verb := range []string{"cancel", "approve", "deny"} {
		r := rows[i]
		if r.RunID != bobs.ID || r.Path != "/v1/runs/"+bobs.ID+"/"+verb || r.Method != "POST" ||
			r.Status != http.StatusForbidden || r.Reason != "not the run's owner" || !strings.Contains(r.Purpose, "(alice, operator)") {
			t.Errorf("denial row %d: %+v", i, r.Entry)
		}
	}
	// The rows are in the audit API too, filtered by run and action.
	page, err := alice.ListAudit(ctx, api.AuditQuery{RunID: bobs.ID, Action: string(audit.ActionAPIDenied)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Audit) != 3 || page.Audit[0].Path != "/v1/runs/"+bobs.ID+"/deny" || page.Audit[0].RunID != bobs.ID {
		t.Errorf("GET /v1/audit?run=…&action=api_denied: %+v", page.Audit)
	}
	// Bob may act on his own run; the admin on anyone's.
	if _, err := bob.Decide(ctx, bobs.ID, true); err == nil {
		t.Error("approving a queued run succeeded")
	} else {
		checkAPIError(t, err, http.StatusConflict, "conflict")
	}
	alices, err := alice.CreateRun(ctx, &agent.Request{Prompt: "alice's", Script: json.RawMessage(finalScript)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.client.CancelRun(ctx, alices.ID); err != nil || res.Run.Status != "cancelled" {
		t.Errorf("the admin cancelling alice's run: %+v, %v", res, err)
	}
	if res, err := bob.CancelRun(ctx, bobs.ID); err != nil || res.Run.Status != "cancelled" {
		t.Errorf("bob cancelling his run: %+v, %v", res, err)
	}
	if n := len(f.denials()); n != 3 {
		t.Errorf("%d api_denied rows after allowed actions, want still 3", n)
	}
}

// TestTokenLastUsed: a request records when its token was used.
func TestTokenLastUsed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	ctx := context.Background()
	before := time.Now()
	viewer := f.as(f.token("vic", token.RoleViewer))
	tokens, _ := f.sqlite.TokenList(ctx)
	if vic := tokens[len(tokens)-1]; !vic.LastUsedAt.IsZero() {
		t.Fatalf("a new token has LastUsedAt %v", vic.LastUsedAt)
	}
	if _, err := viewer.ListRuns(ctx, agent.RunFilter{}); err != nil {
		t.Fatal(err)
	}
	tokens, _ = f.sqlite.TokenList(ctx)
	if vic := tokens[len(tokens)-1]; vic.LastUsedAt.Before(before) {
		t.Errorf("LastUsedAt %v after a request made after %v", vic.LastUsedAt, before)
	}
}

// TestTokensNeedAnAuditLog: the API refuses to authenticate without a place
// to record denials.
func TestTokensNeedAnAuditLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	if _, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, Tokens: f.sqlite}); err == nil {
		t.Fatal("NewHandler with Tokens and no Audit succeeded")
	}
}

// TestCSRFSafe: a browser's cross-site form post carries no token (there
// are no cookies to carry), so it is refused.
func TestCSRFSafe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	req, _ := http.NewRequest("POST", f.url+"/v1/runs", strings.NewReader("prompt=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.AddCookie(&http.Cookie{Name: "session", Value: "whatever"})
	resp, err := f.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp.StatusCode, resp.Header, body, http.StatusUnauthorized, "unauthenticated")
	if runs, _ := f.client.ListRuns(context.Background(), agent.RunFilter{}); len(runs) != 0 {
		t.Errorf("a cross-site post made %d runs", len(runs))
	}
}

// TestEveryRouteRefusesBelowItsRole: every route registered on the mux —
// those of other files too, present and future — refuses a request without
// a token (401) and one whose role is below the route's (403), and audits
// both. What each role may do is TestRoutesByRole's.
func TestEveryRouteRefusesBelowItsRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	h, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, Catalogue: emptyCatalogue(t)})
	if err != nil {
		t.Fatal(err)
	}
	below := map[token.Role][]token.Role{
		token.RoleViewer:   nil,
		token.RoleOperator: {token.RoleViewer},
		token.RoleAdmin:    {token.RoleViewer, token.RoleOperator},
	}
	secrets := map[token.Role]string{}
	for _, role := range []token.Role{token.RoleViewer, token.RoleOperator} {
		secrets[role] = f.token("low-"+string(role), role)
	}
	wantRows := 0
	for pattern, least := range api.Routes(h) {
		if least == "" {
			continue
		}
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.NewReplacer("{id}", "run_x", "{name}", "x").Replace(path)
		status, header, body := f.request(method, path, "", "")
		checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
		wantRows++
		for _, role := range below[least] {
			status, header, body := f.request(method, path, "Bearer "+secrets[role], "")
			checkError(t, status, header, body, http.StatusForbidden, "forbidden")
			wantRows++
		}
	}
	if n := len(f.denials()); n != wantRows {
		t.Errorf("%d api_denied rows, want %d", n, wantRows)
	}
}

// TestWhoAmI: a token learns its name and role (and id), never its secret.
func TestWhoAmI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	secret := f.token("alice", token.RoleOperator)
	id, err := f.as(secret).WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "alice" || id.Role != token.RoleOperator || !strings.HasPrefix(id.TokenID, "tok_") {
		t.Errorf("WhoAmI = %+v, want alice, operator and her token's id", id)
	}
	_, err = f.as("").WhoAmI(context.Background())
	checkAPIError(t, err, http.StatusUnauthorized, "unauthenticated")

	local := newFixture(t, options{idle: true})
	if id, err := local.client.WhoAmI(context.Background()); err != nil || id.Name != "local" || id.Role != token.RoleAdmin || id.TokenID != "" {
		t.Errorf("WhoAmI without tokens = %+v, %v; want local, admin, no token", id, err)
	}
}
