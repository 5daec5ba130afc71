package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/token"
)

// recheckOften re-reads a stream's token every few milliseconds, so that a
// test does not wait the default second for it.
func recheckOften(c *api.Config) {
	c.EventRecheck = 10 * time.Millisecond
	c.EventInterval = time.Hour // the poller reads only when nudged
}

// waitEnded waits for s to end, failing if it does not within patience.
func (s *stream) waitEnded(what string) {
	s.t.Helper()
	select {
	case <-s.ended:
	case <-time.After(patience):
		s.t.Fatalf("the stream did not end after %s", what)
	}
}

// stillOpen checks that s has not ended and still delivers: run id's
// change to status reaches it.
func (s *stream) stillOpen(what string, id string, status agent.Status) {
	s.t.Helper()
	select {
	case <-s.ended:
		s.t.Fatalf("the stream of a valid token ended after %s", what)
	default:
	}
	s.next(what, runIs(s.t, id, status))
}

// A stream whose token is revoked ends, while a stream of a valid token
// goes on.
func TestEventsEndWhenTheTokenIsRevoked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true, configure: recheckOften})
	ctx := context.Background()
	vic, other := f.token("vic", token.RoleViewer), f.token("olga", token.RoleViewer)
	run := f.create(finalScript)
	revoked, kept := f.subscribeAs("?run="+run.ID, vic), f.subscribeAs("", other)
	revoked.next("the run", runIs(t, run.ID, agent.StatusQueued))
	kept.next("the run", runIs(t, run.ID, agent.StatusQueued))

	tokens, err := f.sqlite.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		if tok.Name == "vic" {
			if err := f.sqlite.TokenRevoke(ctx, tok.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	revoked.waitEnded("its token was revoked")
	if _, err := f.client.CancelRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	kept.stillOpen("another token was revoked", run.ID, agent.StatusCancelled)
}

// A stream whose token's role changed ends (its client reconnects under
// the role it has now); a stream of a token whose role stayed goes on.
func TestEventsEndWhenTheRoleChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true, configure: recheckOften})
	ctx := context.Background()
	ops, other := f.token("ops", token.RoleOperator), f.token("olga", token.RoleViewer)
	run := f.create(finalScript)
	changed, kept := f.subscribeAs("", ops), f.subscribeAs("", other)
	changed.next("the run", runIs(t, run.ID, agent.StatusQueued))
	kept.next("the run", runIs(t, run.ID, agent.StatusQueued))

	// The store has no verb for it: an operator edits the row.
	db := f.rawDB()
	if res, err := db.ExecContext(ctx, `UPDATE api_tokens SET role = 'viewer' WHERE name = 'ops'`); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("the role change touched %d tokens, want 1", n)
	}
	changed.waitEnded("its token's role changed")
	if _, err := f.client.CancelRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	kept.stillOpen("another token's role changed", run.ID, agent.StatusCancelled)
}

// A stream whose token can no longer be read ends: nothing vouches for it
// (and its reconnection is answered 503 until the store is back).
func TestEventsEndWhenTheTokenStoreFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true, configure: recheckOften})
	run := f.create(finalScript)
	s := f.subscribeAs("", f.client.Token)
	s.next("the run", runIs(t, run.ID, agent.StatusQueued))
	if _, err := f.rawDB().ExecContext(context.Background(), `ALTER TABLE api_tokens RENAME TO api_tokens_gone`); err != nil {
		t.Fatal(err)
	}
	s.waitEnded("its token could not be read")
	status, header, body := f.request("GET", "/v1/events", "Bearer "+f.client.Token, "")
	checkError(t, status, header, body, http.StatusServiceUnavailable, "unavailable")
}

// rawDB opens f's SQLite file beside its store, for what the store has no
// verb for; the test's end closes it.
func (f *fixture) rawDB() *sql.DB {
	f.t.Helper()
	db, err := sql.Open("sqlite", "file:"+f.dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { db.Close() })
	return db
}
