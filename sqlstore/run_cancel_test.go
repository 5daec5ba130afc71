package sqlstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// A cancel that wins is one statement — authorisation, the task check and,
// on PostgreSQL, the announcement included — and one that loses is one
// statement too (nothing read before it).
func TestRunCancelIsOneStatement(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		open func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store
	}{
		{"SQLite", func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store {
			s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "andon.db"), sqlstore.OpenCounter(c))
			return opened(t, s, err)
		}},
		{"PostgreSQL", func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store {
			s, err := sqlstore.OpenPostgres(t.Context(), pgtest.WithParams(pgSchema(t), map[string]string{"pool_max_conns": "4"}), sqlstore.OpenCounter(c))
			return opened(t, s, err)
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			c := &sqlstore.StatementCounter{}
			s := b.open(t, c)
			for _, id := range []string{"r1", "r2"} {
				if err := s.RunInsert(ctx, &agent.Run{ID: id, Owner: "alice", Status: agent.StatusRunning, Request: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				what string
				id   string
				by   agent.Actor
				win  bool
			}{
				{"a winning cancel by the owner, announced", "r1", agent.Actor{ID: "alice"}, true},
				{"a cancel by someone else", "r2", agent.Actor{ID: "bob"}, false},
				{"a cancel of a finished run", "r1", agent.Actor{ID: "root", Admin: true}, false},
			} {
				before := c.Read()
				won, _, err := s.RunCancel(ctx, tc.id, tc.by, true)
				if err != nil || won != tc.win {
					t.Fatalf("%s: RunCancel = %v, %v; want %v", tc.what, won, err, tc.win)
				}
				if d := c.Read().Sub(before); d.Statements != 1 || d.Transactions != 0 {
					t.Errorf("%s: %d statements in %d transactions; want 1 statement, no transaction", tc.what, d.Statements, d.Transactions)
				}
			}
		})
	}
}

// On PostgreSQL, the cancel's own statement announces it: a listener
// hears the run of a cancel that won, and nothing of one that lost (not
// the owner's, finished, has a task) or that was not asked to announce.
// Notifications arrive in commit order, so the next one after the losers
// is the next winner's.
func TestRunCancelAnnouncesOnlyWhatItCancelled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openPG(t)
	l := listen(t, s)
	for _, id := range []string{"won1", "lost", "quiet", "won2", "tasked"} {
		if err := s.RunInsert(ctx, &agent.Run{ID: id, Owner: "alice", Status: agent.StatusRunning, LeaseOwner: "w1",
			LeaseExpires: time.Now().Add(time.Hour), Request: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.TaskRecord(ctx, "w1", &agent.Task{CallRef: agent.CallRef{RunID: "tasked", Step: 1, Tool: "t"}, Server: "s", ID: "t1"}); err != nil || !ok {
		t.Fatalf("TaskRecord = %v, %v", ok, err)
	}
	admin := agent.Actor{ID: "root", Admin: true}
	mustCancel := func(id string, by agent.Actor, announce, want bool) {
		t.Helper()
		won, announced, err := s.RunCancel(ctx, id, by, announce)
		if err != nil || won != want || announced != (want && announce) {
			t.Fatalf("RunCancel(%s, %s, announce %v) = %v, %v, %v; want won %v", id, by.ID, announce, won, announced, err, want)
		}
	}
	mustCancel("won1", admin, true, true)
	if got := l.next(); got != "won1" {
		t.Fatalf("heard %q, want won1", got)
	}
	mustCancel("lost", agent.Actor{ID: "bob"}, true, false) // not bob's
	mustCancel("won1", admin, true, false)                  // finished
	mustCancel("tasked", admin, true, false)                // has a task
	mustCancel("quiet", admin, false, true)                 // not asked to announce
	mustCancel("won2", agent.Actor{ID: "alice"}, true, true)
	if got := l.next(); got != "won2" {
		t.Fatalf("heard %q after the cancels that lost or were not to be announced; want won2, the next winner", got)
	}
}
