package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// cancelNoticeWait bounds how long a command waits, after an interrupted
// request, for the client to report that it sent the cancellation
// notification. Past it the command closes the client anyway: exiting is
// never held hostage to telling the server.
const cancelNoticeWait = 500 * time.Millisecond

// cancelNotices is a log handler that passes records on to next, and
// notices when the MCP client reports the outcome of a cancellation
// notification (sent, or failed): its records carry a request_id attribute.
//
// Why: mcp.Client sends notifications/cancelled from a background goroutine
// after the interrupted call has returned, and Client.Close closes the
// connection's writer without waiting for that goroutine. A command that
// exits right after an interrupted call can therefore lose the notification
// (the server only sees its stdin close). Waiting for the client's report
// before Close keeps "the server is told" true. Remove this once Close
// flushes pending cancellation notifications itself.
type cancelNotices struct {
	next slog.Handler
	seen *noticeSignal
}

type noticeSignal struct {
	once sync.Once
	ch   chan struct{}
}

func newCancelNotices(next slog.Handler) *cancelNotices {
	return &cancelNotices{next: next, seen: &noticeSignal{ch: make(chan struct{})}}
}

// wait waits until a cancellation notification's outcome was logged, at most
// cancelNoticeWait.
func (h *cancelNotices) wait() {
	t := time.NewTimer(cancelNoticeWait)
	defer t.Stop()
	select {
	case <-h.seen.ch:
	case <-t.C:
	}
}

// Enabled is true at every level: the client reports a sent notification at
// debug level, which must be seen even when it is not printed.
func (h *cancelNotices) Enabled(context.Context, slog.Level) bool { return true }

// Handle notes a cancellation report, and passes r on if next prints its level.
func (h *cancelNotices) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "request_id" {
			h.seen.once.Do(func() { close(h.seen.ch) })
			return false
		}
		return true
	})
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns a handler with attrs that reports to the same signal.
func (h *cancelNotices) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &cancelNotices{next: h.next.WithAttrs(attrs), seen: h.seen}
}

// WithGroup returns a handler with a group that reports to the same signal.
func (h *cancelNotices) WithGroup(name string) slog.Handler {
	return &cancelNotices{next: h.next.WithGroup(name), seen: h.seen}
}
