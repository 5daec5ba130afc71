package catalogue

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/andonhq/andon/agent"
)

// A server's log messages (notifications/message) reach the process log
// through the mcp client's Logger, with the server's name and level — and,
// through logTap, the timeline of the run whose call is in flight on the
// server (agent.RecordServerLog): as for a server's question on a
// handshake-era revision, the message does not say which call it is about,
// so it goes to the run with a call in flight on the server if exactly one
// run has one, and to the process log alone otherwise. The server's text is
// untrusted: the server's own configured secrets (header and environment
// values, URL credentials) are scrubbed from it, it is cut to
// agent.MaxServerLogText, and a run records at most agent.MaxServerLogs of
// them. Debug messages go to the process log only.

// serverLogMessage is the message the mcp client logs a server's log
// message under (mcp/client.go); its attributes are level, logger and data.
const serverLogMessage = "mcp: server log"

// logTap is the slog handler of a server's client: it hands everything to
// next, and a server's log messages to the run they belong to as well.
type logTap struct {
	next slog.Handler
	s    *server
}

func (s *server) clientLogger() *slog.Logger {
	return slog.New(&logTap{next: s.logger.Handler(), s: s})
}

// Enabled is true at every level: a server's message goes to the run's
// timeline even when the process log would drop it.
func (l *logTap) Enabled(context.Context, slog.Level) bool { return true }

func (l *logTap) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == serverLogMessage {
		l.tap(r)
	}
	if !l.next.Enabled(ctx, r.Level) {
		return nil
	}
	return l.next.Handle(ctx, r)
}

func (l *logTap) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logTap{next: l.next.WithAttrs(attrs), s: l.s}
}

func (l *logTap) WithGroup(name string) slog.Handler {
	return &logTap{next: l.next.WithGroup(name), s: l.s}
}

// tap records a server's log message in the timeline of its run, if it
// has one.
func (l *logTap) tap(r slog.Record) {
	m := agent.ServerLog{Server: l.s.cfg.Name}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "level":
			m.Level = a.Value.String()
		case "logger":
			m.Logger = a.Value.String()
		case "data":
			m.Text = a.Value.String()
		}
		return true
	})
	if m.Level == "debug" {
		return
	}
	call := l.s.calls.only(agent.InToolCall)
	if call == nil {
		return
	}
	var text string
	if json.Unmarshal([]byte(m.Text), &text) == nil {
		m.Text = text // a JSON string: its text; anything else stays JSON
	}
	m.Text = scrub(m.Text, serverSecrets(&l.s.cfg))
	m.Logger = scrub(m.Logger, serverSecrets(&l.s.cfg))
	l.s.logs.push(l.s, call, m)
}

// logQueue hands a server's log messages to its runs on a goroutine of
// its own, in order: the client's reader, which delivers them, never waits
// for the store. A server that logs faster than the store records loses
// messages from the timeline (never from the process log), and the loss is
// logged.
type logQueue struct {
	once    sync.Once
	ch      chan queuedLog
	dropped atomic.Int64
}

type queuedLog struct {
	call context.Context
	m    agent.ServerLog
}

// logQueueSize bounds the messages waiting to be recorded, per server.
const logQueueSize = 64

func (q *logQueue) push(s *server, call context.Context, m agent.ServerLog) {
	q.once.Do(func() {
		q.ch = make(chan queuedLog, logQueueSize)
		s.cat.goAside(func() {
			for {
				select {
				case it := <-q.ch:
					agent.RecordServerLog(it.call, it.m)
				case <-s.cat.importsCtx.Done():
					return
				}
			}
		})
	})
	select {
	case q.ch <- queuedLog{call: call, m: m}:
	default:
		if q.dropped.Add(1)%100 == 1 {
			s.logger.Warn("catalogue: a server logs faster than its runs' steps record; messages are left out of the timeline", "dropped", q.dropped.Load())
		}
	}
}
