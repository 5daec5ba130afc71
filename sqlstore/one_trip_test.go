package sqlstore_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/token"
)

// tripCounter is a TCP proxy in front of PostgreSQL that counts round
// trips: each time a client sends after the server has last spoken (or
// first), the client has waited for an answer, and a new trip begins.
type tripCounter struct {
	ln    net.Listener
	mu    sync.Mutex
	trips int
	last  map[net.Conn]bool // true: the server spoke last on this client's connection
	wg    sync.WaitGroup
}

// newTripCounter proxies to the server of dsn and returns dsn pointed at
// the proxy. It stops when t ends.
func newTripCounter(t *testing.T, dsn string) (*tripCounter, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	tc := &tripCounter{ln: ln, last: map[net.Conn]bool{}}
	var conns sync.Map
	tc.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, s)
			tc.mu.Lock()
			tc.last[c] = true
			tc.mu.Unlock()
			tc.wg.Go(func() { tc.pipe(c, s, c, false) })
			tc.wg.Go(func() { tc.pipe(c, c, s, true) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, s any) bool {
			c.(net.Conn).Close()
			s.(net.Conn).Close()
			return true
		})
		tc.wg.Wait()
	})
	u.Host = ln.Addr().String()
	return tc, u.String()
}

// pipe copies dst ← src for client connection c, counting a trip for each
// burst the client sends after the server spoke (fromServer: src is the
// server).
func (tc *tripCounter) pipe(c, dst, src net.Conn, fromServer bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			tc.mu.Lock()
			if !fromServer && tc.last[c] {
				tc.trips++
			}
			tc.last[c] = fromServer
			tc.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			return
		}
	}
}

// during returns the trips that f took.
func (tc *tripCounter) during(f func()) int {
	tc.mu.Lock()
	before := tc.trips
	tc.mu.Unlock()
	f()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.trips - before
}

// The statements on a cancel's path — the watcher's read of run rows and
// the cancel by token — cost one round trip on a connection that has never
// run them, not a prepare and then an execute: across machines, each trip
// is a link's round trip added to the cancel.
func TestCancelPathStatementsTakeOneTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Two connections (the migration needs both): neither has run these
	// statements before the first of each below, and with both idle
	// between the calls none is dialled during one.
	counter, dsn := newTripCounter(t, pgtest.WithParams(pgSchema(t), map[string]string{"pool_max_conns": "2"}))
	s, err := sqlstore.OpenPostgres(ctx, dsn)
	s = opened(t, s, err)
	tc, ok := s.TokenCanceller()
	if !ok {
		t.Fatal("no TokenCanceller on PostgreSQL")
	}
	hash := storeToken(t, s, "alice", token.RoleOperator, false)
	for _, id := range []string{"r1", "r2"} {
		if err := s.RunInsert(ctx, &agent.Run{ID: id, Owner: "alice", Status: agent.StatusRunning, LeaseOwner: "w1",
			LeaseExpires: time.Now().Add(time.Hour), Request: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}

	for i, want := range []agent.Status{agent.StatusRunning, agent.StatusRunning} { // cold, then warm
		var statuses map[string]agent.Status
		trips := counter.during(func() { statuses, err = s.RunStatuses(ctx, []string{"r1", "r2"}) })
		if err != nil {
			t.Fatal(err)
		}
		if statuses["r1"] != want || statuses["r2"] != want {
			t.Errorf("read %d: statuses %v, want both %s", i+1, statuses, want)
		}
		if trips != 1 {
			t.Errorf("read %d of run statuses took %d round trips, want 1", i+1, trips)
		}
	}

	for i, id := range []string{"r1", "r2"} { // cold, then warm
		var won bool
		trips := counter.during(func() { _, won, _, err = tc.RunCancelByToken(ctx, hash, id, token.RoleOperator, true) })
		if err != nil {
			t.Fatal(err)
		}
		if !won {
			t.Errorf("cancel %d by token of %s did not win", i+1, id)
		}
		if trips != 1 {
			t.Errorf("cancel %d by token took %d round trips, want 1", i+1, trips)
		}
	}
	statuses, err := s.RunStatuses(ctx, []string{"r1", "r2"})
	if err != nil {
		t.Fatal(err)
	}
	if statuses["r1"] != agent.StatusCancelled || statuses["r2"] != agent.StatusCancelled {
		t.Errorf("after the cancels, statuses %v, want both cancelled", statuses)
	}
}
