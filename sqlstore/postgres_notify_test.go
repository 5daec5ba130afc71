package sqlstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// notifyPatience bounds every wait in these tests: it only keeps a broken
// test from hanging; nothing asserts how long anything took.
const notifyPatience = 10 * time.Second

// listener is a PostgreSQL store's ListenCancelled running for a test.
type listener struct {
	t         *testing.T
	got       chan []string // run ids, a value per call of fn
	listening chan struct{} // a value each time the listener is in place
	logs      *syncBuffer
	stop      func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// listen starts s.ListenCancelled and waits until it listens. It is
// stopped, and checked to return nil, at cleanup (or by stop).
func listen(t *testing.T, s *sqlstore.Store, opts ...sqlstore.ListenOption) *listener {
	t.Helper()
	l := &listener{t: t, got: make(chan []string, 100), listening: make(chan struct{}, 100), logs: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts = append([]sqlstore.ListenOption{
		sqlstore.ListenLogger(slog.New(slog.NewTextHandler(l.logs, nil))),
		sqlstore.ListenOnListening(func() { l.listening <- struct{}{} }),
	}, opts...)
	n := notifier(t, s)
	go func() { done <- n.ListenCancelled(ctx, func(ids ...string) { l.got <- ids }, opts...) }()
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ListenCancelled returned %v when its context ended, want nil", err)
				}
			case <-time.After(notifyPatience):
				t.Errorf("ListenCancelled did not return after its context ended")
			}
		})
	}
	t.Cleanup(l.stop)
	l.waitListening()
	return l
}

func (l *listener) waitListening() {
	l.t.Helper()
	select {
	case <-l.listening:
	case <-time.After(notifyPatience):
		l.t.Fatalf("the listener is not listening; its log:\n%s", l.logs.String())
	}
}

// next returns the run id of the next notification the listener heard,
// which must name one run.
func (l *listener) next() string {
	l.t.Helper()
	ids := l.nextCall()
	if len(ids) != 1 {
		l.t.Fatalf("the listener heard %d runs in one notification (%q), want one", len(ids), ids)
	}
	return ids[0]
}

// nextCall returns the run ids of the next notification the listener heard.
func (l *listener) nextCall() []string {
	l.t.Helper()
	select {
	case ids := <-l.got:
		return ids
	case <-time.After(notifyPatience):
		l.t.Fatalf("the listener heard nothing; its log:\n%s", l.logs.String())
		return nil
	}
}

// notifier returns s's Notifier, failing t if it has none.
func notifier(t *testing.T, s *sqlstore.Store) sqlstore.Notifier {
	t.Helper()
	n, ok := s.Notifier()
	if !ok || n == nil {
		t.Fatal("a PostgreSQL store has no Notifier")
	}
	return n
}

func notify(t *testing.T, s *sqlstore.Store, id string) {
	t.Helper()
	if err := notifier(t, s).NotifyCancelled(t.Context(), id); err != nil {
		t.Fatal(err)
	}
}

// A cancel announced through one store (a process) reaches the listener of
// another: the ids in order, and nothing else.
func TestPostgresNotifyReachesAnotherStore(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	a, b := openPGAt(t, dsn), openPGAt(t, dsn)
	l := listen(t, b)
	for _, id := range []string{"run_1", "run_2", "run_3"} {
		notify(t, a, id)
	}
	for _, want := range []string{"run_1", "run_2", "run_3"} {
		if got := l.next(); got != want {
			t.Fatalf("heard %q, want %q", got, want)
		}
	}
	// The announcing store hears its own cancels too (a process's watcher
	// is told directly as well; hearing it twice is harmless).
	own := listen(t, a)
	notify(t, a, "run_4")
	if got := own.next(); got != "run_4" {
		t.Errorf("the announcing store's own listener heard %q", got)
	}
	if got := l.next(); got != "run_4" {
		t.Errorf("heard %q, want run_4", got)
	}
	l.stop()
	own.stop()
	select {
	case id := <-l.got:
		t.Errorf("heard %q, which nobody announced", id)
	default:
	}
	if logs := l.logs.String(); logs != "" {
		t.Errorf("the listener logged:\n%s", logs)
	}
}

// Runs announced together are named together: as many notifications as
// their ids need (a payload holds under 8,000 bytes), not one each, and a
// listener hands each over in one call.
func TestPostgresNotifyNamesRunsTogether(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	a, b := openPGAt(t, dsn), openPGAt(t, dsn)
	l := listen(t, b)
	var ids []string
	for i := range 500 { // 20 bytes each: 10,500 bytes of ids
		ids = append(ids, fmt.Sprintf("run_%016x", i))
	}
	if err := notifier(t, a).NotifyCancelled(t.Context(), ids...); err != nil {
		t.Fatal(err)
	}
	first, second := l.nextCall(), l.nextCall()
	if len(first) == 0 || len(second) == 0 {
		t.Fatalf("heard %d and %d runs in two notifications", len(first), len(second))
	}
	heard := slices.Concat(first, second)
	slices.Sort(heard)
	if !slices.Equal(heard, ids) {
		t.Errorf("two notifications named %d runs (%d, %d); want the 500 announced", len(heard), len(first), len(second))
	}
	l.stop()
	select {
	case more := <-l.got:
		t.Errorf("a third notification named %d runs; want two for 10,500 bytes of ids", len(more))
	default:
	}
}

// Deployments in two schemas of one database do not hear each other's
// cancels. PostgreSQL delivers notifications in commit order, so had the
// listener heard the other schema's, it would have heard it first.
func TestPostgresNotifySchemasAreApart(t *testing.T) {
	t.Parallel()
	mine, other := openPGAt(t, pgSchema(t)), openPGAt(t, pgSchema(t))
	l := listen(t, mine)
	notify(t, other, "run_other")
	notify(t, mine, "run_mine")
	if got := l.next(); got != "run_mine" {
		t.Fatalf("heard %q first, want run_mine: the schemas' channels cross", got)
	}
	l.stop()
	select {
	case id := <-l.got:
		t.Errorf("heard %q too", id)
	default:
	}
}

// When its connection is killed, the listener logs a warning, reconnects
// and hears the cancels announced after that.
func TestPostgresListenerSurvivesADroppedConnection(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	app := "andon_listener_" + hex.EncodeToString(b[:])
	a, s := openPGAt(t, dsn), openPGAt(t, pgtest.WithParams(dsn, map[string]string{"application_name": app}))
	l := listen(t, s)

	for round := range 2 {
		// Every connection of that store, the listener's among them.
		killed := terminate(t, dsn, app)
		if killed == 0 {
			t.Fatal("no backend to terminate")
		}
		l.waitListening()
		if logs := l.logs.String(); strings.Count(logs, "level=WARN") != round+1 || !strings.Contains(logs, "reconnecting") {
			t.Errorf("after %d dropped connections the listener logged:\n%s", round+1, logs)
		}
		notify(t, a, "after_drop")
		if got := l.next(); got != "after_drop" {
			t.Fatalf("after the reconnect the listener heard %q", got)
		}
	}
}

// terminate kills every backend whose application_name is app, and returns
// how many there were.
func terminate(t *testing.T, dsn, app string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A listener that hears nothing pings its connection every health interval
// and keeps listening: the pings neither lose a notification nor drop the
// connection.
func TestPostgresListenerIdlePingsKeepListening(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	a, b := openPGAt(t, dsn), openPGAt(t, dsn)
	l := listen(t, b, sqlstore.ListenHealthInterval(time.Millisecond))
	for i := range 20 {
		time.Sleep(5 * time.Millisecond) // several silent intervals, so pings happen between the notifies
		id := "run_" + string(rune('a'+i))
		notify(t, a, id)
		if got := l.next(); got != id {
			t.Fatalf("heard %q, want %q", got, id)
		}
	}
	l.stop()
	select {
	case <-l.listening:
		t.Errorf("the listener reconnected; its log:\n%s", l.logs.String())
	default:
	}
	if logs := l.logs.String(); logs != "" {
		t.Errorf("the listener logged:\n%s", logs)
	}
}

// ListenCancelled without a function is an error, not a goroutine that
// panics later.
func TestPostgresListenCancelledNeedsAFunction(t *testing.T) {
	t.Parallel()
	s := openPG(t)
	if err := notifier(t, s).ListenCancelled(t.Context(), nil); err == nil {
		t.Error("ListenCancelled(nil) = nil")
	}
}
