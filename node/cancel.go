package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// notifyTimeout bounds the NOTIFY and the job cancel that tell other
// processes of a cancel.
const notifyTimeout = 5 * time.Second

// cancelBus is what a store offers when it can carry a cancel to other
// processes at once: PostgreSQL's LISTEN/NOTIFY. A SQLite store has none;
// there, the worker holding a cancelled run hears of it from River (the
// run's job is cancelled with it), and the watcher's poll is the backstop.
type cancelBus = sqlstore.Notifier

// listenCancels hands every cancel that any process announces on bus to
// w as a hint (the watcher reads the row before it cancels anything), until
// ctx ends. Each time the listener is in place — first, and after every
// reconnect — w polls at once: a cancel announced while nobody listened was
// missed, and must not wait for the next interval.
func listenCancels(ctx context.Context, bus cancelBus, w *agent.Watcher, logger *slog.Logger) {
	_ = bus.ListenCancelled(ctx, w.Hint,
		sqlstore.ListenLogger(logger),
		sqlstore.ListenOnListening(func() {
			logger.Info("andon: listening for cancels from other processes (PostgreSQL LISTEN)")
			w.Poll(ctx)
		}))
}
