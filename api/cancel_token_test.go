package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// countingTokens counts the token reads of the ordinary way.
type countingTokens struct {
	token.Store
	byHash atomic.Int64
}

func (c *countingTokens) TokenByHash(ctx context.Context, hash []byte) (*token.Token, error) {
	c.byHash.Add(1)
	return c.Store.TokenByHash(ctx, hash)
}

// cancelOutcome is what one cancel request got.
type cancelOutcome struct {
	status   int
	code     string // the error's code; empty on success
	runAfter string // the run's status afterwards
	reads    int64  // token reads by the ordinary way
	message  string // the error's message
}

// cancelsByToken makes the same cancel requests, with good, bad and
// refused tokens, against an API on a fresh store (SQLite or PostgreSQL)
// and returns what each got and the api_denied rows it left, with the
// tokens' ids (which differ between stores) masked.
func cancelsByToken(t *testing.T, postgres bool) ([]cancelOutcome, []audit.Entry) {
	t.Helper()
	var tokens *countingTokens
	f := newFixture(t, options{idle: true, tokens: true, postgres: postgres, configure: func(c *api.Config) {
		tokens = &countingTokens{Store: c.Tokens}
		c.Tokens = tokens
	}})
	ctx := context.Background()
	alice := f.token("alice", token.RoleOperator)
	bob := f.token("bob", token.RoleOperator)
	vic := f.token("vic", token.RoleViewer)
	carol := f.token("carol", token.RoleAdmin)
	all, err := f.sqlite.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sqlite.TokenRevoke(ctx, all[len(all)-1].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	never, _, err := token.New("dave", token.RoleAdmin, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for range 3 {
		r, err := f.as(alice).CreateRun(ctx, &agent.Request{Prompt: "alice's", Script: json.RawMessage(finalScript)})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r.ID)
	}
	var out []cancelOutcome
	for _, c := range []struct{ auth, run string }{
		{"", runs[0]},
		{"Bearer garbage", runs[0]},
		{"Bearer " + never, runs[0]},
		{"Bearer " + carol, runs[0]}, // revoked
		{"Bearer " + vic, runs[0]},   // a viewer
		{"Bearer " + bob, runs[0]},   // not his
		{"Bearer " + alice, "run_nosuchrun"},
		{"Bearer " + alice, runs[0]},
		{"Bearer " + alice, runs[0]}, // finished
		{"Bearer " + f.client.Token, runs[1]},
	} {
		before := tokens.byHash.Load()
		status, header, body := f.request("POST", "/v1/runs/"+c.run+"/cancel", c.auth, "")
		o := cancelOutcome{status: status, reads: tokens.byHash.Load() - before}
		if status != http.StatusOK {
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %s: %v", body, err)
			}
			o.code, o.message = e.Error.Code, e.Error.Message
			if status == http.StatusUnauthorized && header.Get("WWW-Authenticate") == "" {
				t.Errorf("a 401 without WWW-Authenticate")
			}
		}
		if d, err := f.client.GetRun(ctx, c.run); err == nil {
			o.runAfter = d.Run.Status
		}
		out = append(out, o)
		f.checkSecretsAbsent(string(body), alice, bob, vic, carol, never)
	}
	if d, err := f.client.GetRun(ctx, runs[2]); err != nil || d.Run.Status != string(agent.StatusQueued) {
		t.Errorf("the run nobody cancelled: %+v, %v", d, err)
	}
	tokenID := regexp.MustCompile(`tok_[0-9a-f]+`)
	var rows []audit.Entry
	for _, r := range f.denials() {
		e := r.Entry
		e.Time, e.RunID = time.Time{}, ""
		e.Purpose = tokenID.ReplaceAllString(e.Purpose, "tok_…")
		e.Path = regexp.MustCompile(`run_[0-9a-f]{16}`).ReplaceAllString(e.Path, "run_…")
		rows = append(rows, e)
	}
	return out, rows
}

// TestCancelByTokenAnswersAsBefore: on PostgreSQL an operator's cancel
// checks its token in the statement that cancels, and answers, refuses and
// audits every cancel exactly as the ordinary way does on SQLite: a
// missing, unknown, revoked or viewer's token, or another operator's,
// cancels nothing and leaves the same api_denied rows; a cancel allowed and
// won reads no token on the side (one round trip), everything else goes
// the ordinary way.
func TestCancelByTokenAnswersAsBefore(t *testing.T) {
	t.Parallel()
	lite, liteRows := cancelsByToken(t, false)
	pg, pgRows := cancelsByToken(t, true)
	q, c := string(agent.StatusQueued), string(agent.StatusCancelled)
	want := []cancelOutcome{
		{http.StatusUnauthorized, "unauthenticated", q, 0, ""},
		{http.StatusUnauthorized, "unauthenticated", q, 0, ""},
		{http.StatusUnauthorized, "unauthenticated", q, 1, ""},
		{http.StatusUnauthorized, "unauthenticated", q, 1, ""},
		{http.StatusForbidden, "forbidden", q, 1, ""},
		{http.StatusForbidden, "forbidden", q, 1, ""},
		{http.StatusNotFound, "not_found", "", 1, ""},
		{http.StatusOK, "", c, 1, ""},
		{http.StatusConflict, "conflict", c, 1, ""},
		{http.StatusOK, "", c, 1, ""},
	}
	for i := range want {
		want[i].message = lite[i].message // the messages: the same on both
	}
	if !slices.Equal(lite, want) {
		t.Errorf("SQLite:\n got %v\nwant %v", lite, want)
	}
	want[7].reads, want[9].reads = 0, 0 // allowed and won: the token checked in the cancel's statement
	if !slices.Equal(pg, want) {
		t.Errorf("PostgreSQL:\n got %v\nwant %v", pg, want)
	}
	if fmt.Sprint(pgRows) != fmt.Sprint(liteRows) || len(liteRows) != 5 {
		t.Errorf("api_denied rows:\nPostgreSQL %+v\n    SQLite %+v\nwant the same five", pgRows, liteRows)
	}
}
