package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/token"
)

// deniedPathCap is the documented cap of an api_denied row's path.
const deniedPathCap = 256

// flood sends n requests with no valid token, from workers goroutines over
// keep-alive connections, each request the one req(i) describes, and
// fails unless every one is refused with 401.
func (f *fixture) flood(n, workers int, req func(i int) (method, path, auth string)) {
	f.t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[int]int{}
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				method, path, auth := req(i)
				r, err := http.NewRequest(method, f.url+path, nil)
				if err != nil {
					panic(err)
				}
				if auth != "" {
					r.Header.Set("Authorization", auth)
				}
				status := 0
				if resp, err := hc.Do(r); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				if status != http.StatusUnauthorized {
					mu.Lock()
					bad[status]++
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(bad) > 0 {
		f.t.Fatalf("of %d requests without a valid token, some were not refused with 401: status → count %v", n, bad)
	}
}

// rowBytes is what a row stores: its fields and MAC (numbers at 8 bytes).
func rowBytes(r audit.Row) int {
	e := r.Entry
	return len(e.Action) + len(e.Purpose) + len(e.RunID) + len(e.Method) + len(e.Host) + len(e.Path) +
		len(e.Reason) + len(r.MAC) + 5*8
}

// deniedMetric is the sum of andon_api_denied_total over its labels, as m
// serves it.
func deniedMetric(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	sum := 0.0
	for series, v := range scrape(t, hs.Client(), hs.URL) {
		if strings.HasPrefix(series, "andon_api_denied_total{") {
			sum += v
		}
	}
	return sum
}

// TestDeniedFloodIsBounded: 10,000 requests without a valid token — no
// token, a malformed header, made-up tokens, 2 KB paths — over real HTTP
// on loopback add at most one row per cause (route and reason) to the
// audit table while the cause's interval lasts, each row small, its path
// capped; andon_api_denied_total counts every one.
func TestDeniedFloodIsBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	f := newFixture(t, options{idle: true, tokens: true, configure: func(c *api.Config) {
		c.Metrics = m
		c.DenialInterval = time.Hour // the whole flood within one interval
	}})
	before, err := f.audit.List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	long := "run_" + strings.Repeat("a", 2000)
	routes := []struct{ method, path string }{
		{"GET", "/v1/runs/" + long},
		{"POST", "/v1/runs/" + long + "/cancel"},
		{"GET", "/v1/runs?status=" + long},
		{"GET", "/v1/audit"},
		{"GET", "/v1/events"},
	}
	madeUp := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return "Bearer andon_" + hex.EncodeToString(b)
	}
	auths := []func() string{
		func() string { return "" },                   // no token
		func() string { return "Basic dXNlcjpwdw==" }, // not a bearer token
		madeUp, // unknown token, a new one each time
	}
	const n = 10_000
	f.flood(n, 8, func(i int) (string, string, string) {
		rt := routes[i%len(routes)]
		return rt.method, rt.path, auths[(i/len(routes))%len(auths)]()
	})

	rows, err := f.audit.List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	rows = rows[len(before):]
	causes := len(routes) * len(auths)
	size := 0
	for _, r := range rows {
		size += rowBytes(r)
		if r.Action != audit.ActionAPIDenied || len(r.Path) > deniedPathCap || r.RunID != "" {
			t.Errorf("row %+v: want an api_denied row, its path at most %d bytes, no run", r.Entry, deniedPathCap)
		}
	}
	t.Logf("%d refusals added %d audit rows, %d bytes", n, len(rows), size)
	if len(rows) > causes || size > causes*1024 {
		t.Errorf("%d refusals added %d audit rows, %d bytes; want at most one per cause: %d rows, %d bytes",
			n, len(rows), size, causes, causes*1024)
	}
	if got := deniedMetric(t, m); got != n {
		t.Errorf("andon_api_denied_total counted %v refusals, want all %d", got, n)
	}
}

// TestDeniedCancelFloodLeavesTheRunSmall: 20,000 cancels of one run without
// a token leave it queued, and its detail small: the refusals are one row
// naming the run.
func TestDeniedCancelFloodLeavesTheRunSmall(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	f := newFixture(t, options{idle: true, tokens: true, configure: func(c *api.Config) {
		c.Metrics = m
		c.DenialInterval = time.Hour
	}})
	run := f.create(finalScript)
	const n = 20_000
	f.flood(n, 8, func(int) (string, string, string) { return "POST", "/v1/runs/" + run.ID + "/cancel", "" })

	status, _, body := f.request("GET", "/v1/runs/"+run.ID, "Bearer "+f.client.Token, "")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/runs/%s: %d %s", run.ID, status, body)
	}
	var d api.RunDetail
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	if d.Run.Status != "queued" {
		t.Errorf("the run is %s after refused cancels, want queued", d.Run.Status)
	}
	if len(d.Audit) != 1 || d.Audit[0].Action != string(audit.ActionAPIDenied) || d.Audit[0].RunID != run.ID ||
		d.Audit[0].Path != "/v1/runs/"+run.ID+"/cancel" || d.Audit[0].Purpose != "api (no token)" {
		t.Errorf("the run's audit rows after %d refused cancels: %d, first %+v; want one api_denied row naming the run", n, len(d.Audit), d.Audit)
	}
	if len(body) > 8<<10 {
		t.Errorf("the run's detail is %d bytes after %d refused cancels, want it small (8 KiB at most)", len(body), n)
	}
	if got := deniedMetric(t, m); got != n {
		t.Errorf("andon_api_denied_total counted %v refusals, want all %d", got, n)
	}
}

// TestDeniedRepeatsAreCounted: the refusals of one cause after its first
// are written, when its interval ends, as api_denied_repeated rows whose
// counts, with the first rows, account for every refusal; and the chain
// still verifies.
func TestDeniedRepeatsAreCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true, configure: func(c *api.Config) {
		c.DenialInterval = 20 * time.Millisecond
	}})
	const n = 300
	f.flood(n, 2, func(int) (string, string, string) { return "GET", "/v1/runs", "" })

	more := regexp.MustCompile(`^no token \((\d+) more\)$`)
	var rows []audit.Row
	deadline := time.Now().Add(patience)
	for {
		var err error
		rows, err = f.audit.List(context.Background(), audit.Query{})
		if err != nil {
			t.Fatal(err)
		}
		counted := 0
		for _, r := range rows {
			switch r.Action {
			case audit.ActionAPIDenied:
				counted++
			case audit.ActionAPIDeniedRepeated:
				m := more.FindStringSubmatch(r.Reason)
				if m == nil || r.Purpose != "api (no token)" || r.Method != "GET" || r.Path != "/v1/runs" ||
					r.Status != http.StatusUnauthorized || r.Duration < 0 {
					t.Fatalf("repeated row %+v: want the first row's cause and reason with the count", r.Entry)
				}
				k, _ := strconv.Atoi(m[1])
				counted += k
			}
		}
		if counted == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log accounts for %d of %d refusals:\n%s", counted, n, describeRows(rows))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.audit.Verify(context.Background()); err != nil {
		t.Errorf("the chain with coalesced rows: %v", err)
	}
}

// TestDeniedCountsAreWrittenOnStop: a server that stops (Config.Stop)
// writes the counts of the intervals still open, rather than lose them.
func TestDeniedCountsAreWrittenOnStop(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	f := newFixture(t, options{idle: true, tokens: true, configure: func(c *api.Config) {
		c.DenialInterval = time.Hour
		c.Stop = stop
	}})
	for range 5 {
		status, header, body := f.request("GET", "/v1/audit", "", "")
		checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
	}
	close(stop)
	deadline := time.Now().Add(patience)
	for {
		rows, err := f.audit.List(context.Background(), audit.Query{Action: audit.ActionAPIDeniedRepeated})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].Reason == "no token (4 more)" && rows[0].Path == "/v1/audit" {
			return
		}
		if len(rows) > 0 || time.Now().After(deadline) {
			t.Fatalf("after Stop, api_denied_repeated rows %v; want one, of the 4 refusals after the first", rows)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeRows(rows []audit.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s %s %q\n", r.Seq, r.Action, r.Path, r.Reason)
	}
	return b.String()
}

// TestDeniedRowCapsPathAndRun: a refused request's row keeps its path
// escaped and capped, and names a run only with an id shaped like one; a
// refused bad token is said to be one.
func TestDeniedRowCapsPathAndRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	ctx := context.Background()
	run, err := f.rt.Submit(ctx, "someone", &agent.Request{Prompt: "p", Script: json.RawMessage(finalScript)})
	if err != nil {
		t.Fatal(err)
	}
	long := "/v1/runs/run_" + strings.Repeat("b", 10_000)
	cases := []struct {
		method, path, auth     string
		wantPath, wantRun, who string
	}{
		{"GET", long, "", long[:deniedPathCap-3] + "...", "", "api (no token)"},
		{"POST", "/v1/runs/" + run.ID + "/cancel", "", "/v1/runs/" + run.ID + "/cancel", run.ID, "api (no token)"},
		{"POST", "/v1/runs/run_%0Abad/approve", "Bearer andon_nope", "/v1/runs/run_%0Abad/approve", "", "api (bad token)"},
	}
	for _, c := range cases {
		status, header, body := f.request(c.method, c.path, c.auth, "")
		checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
	}
	rows := f.denials()
	if len(rows) != len(cases) {
		t.Fatalf("%d api_denied rows, want %d", len(rows), len(cases))
	}
	for i, c := range cases {
		if r := rows[i]; r.Path != c.wantPath || r.RunID != c.wantRun || r.Purpose != c.who {
			t.Errorf("%s %.60s: row path %.60q (%d bytes), run %.60q, purpose %q; want path %.60q, run %q, purpose %q",
				c.method, c.path, r.Path, len(r.Path), r.RunID, r.Purpose, c.wantPath, c.wantRun, c.who)
		}
	}
}

// TestRunDetailPagesAuditRows: a run's detail holds the newest page of its
// audit rows, oldest first, and says where GET /v1/audit continues; the
// pages together hold every row once.
func TestRunDetailPagesAuditRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, audit: true})
	ctx := context.Background()
	run := f.create(finalScript)
	const n = 150
	for i := range n {
		if _, err := f.audit.Record(ctx, audit.Entry{Action: audit.ActionHTTPCall, RunID: run.ID, Method: "POST",
			Host: "mcp.example", Path: fmt.Sprintf("/call/%d", i), Status: 200, OK: true, Reason: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := f.client.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Audit) != 100 || d.Audit[0].Path != "/call/50" || d.Audit[99].Path != "/call/149" || d.AuditNextBefore != d.Audit[0].Seq {
		t.Fatalf("detail: %d audit rows (first %+v), next before %d; want the newest 100, oldest first, and where the older begin",
			len(d.Audit), d.Audit[0], d.AuditNextBefore)
	}
	older, err := f.client.ListAudit(ctx, api.AuditQuery{RunID: run.ID, Before: d.AuditNextBefore})
	if err != nil {
		t.Fatal(err)
	}
	if len(older.Audit) != 50 || older.Audit[0].Path != "/call/49" || older.Audit[49].Path != "/call/0" || older.NextBefore != 0 {
		t.Errorf("the older rows: %d (first %+v), next before %d; want the other 50", len(older.Audit), older.Audit, older.NextBefore)
	}
}

// TestDeniedCausesAreBounded: however many causes a client makes (here an
// operator refused on 300 runs that are not hers, each its own cause),
// the causes tracked at once — and so the rows of an interval — stop at
// 256, and one more row for all the others, which are still counted.
func TestDeniedCausesAreBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	f := newFixture(t, options{idle: true, tokens: true, configure: func(c *api.Config) {
		c.Metrics = m
		c.DenialInterval = time.Hour
	}})
	ctx := context.Background()
	alice := f.token("alice", token.RoleOperator)
	const n = 300
	for range n {
		run, err := f.rt.Submit(ctx, "bob", &agent.Request{Prompt: "p", Script: json.RawMessage(finalScript)})
		if err != nil {
			t.Fatal(err)
		}
		status, header, body := f.request("POST", "/v1/runs/"+run.ID+"/cancel", "Bearer "+alice, "")
		checkError(t, status, header, body, http.StatusForbidden, "forbidden")
	}
	if rows := f.denials(); len(rows) != 256+1 {
		t.Errorf("%d refusals of %d causes made %d api_denied rows, want 257: 256 causes and one for the rest", n, n, len(rows))
	}
	if got := deniedMetric(t, m); got != n {
		t.Errorf("andon_api_denied_total counted %v refusals, want all %d", got, n)
	}
}
