package node

import (
	"context"
	"log/slog"
)

// quieter returns logger with records below min dropped, unless logger
// itself is at debug (-v), which then shows everything. River logs at info
// what an operator never needs, such as a "producer: job counts" line every
// few seconds per queue, which would flood serve's terminal; its warnings
// and errors still show.
func quieter(logger *slog.Logger, min slog.Level) *slog.Logger {
	if logger.Enabled(context.Background(), slog.LevelDebug) {
		return logger
	}
	return slog.New(floorHandler{h: logger.Handler(), min: min})
}

// floorHandler passes on to h only records at min or above.
type floorHandler struct {
	h   slog.Handler
	min slog.Level
}

func (f floorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}

func (f floorHandler) Handle(ctx context.Context, r slog.Record) error {
	return f.h.Handle(ctx, r)
}

func (f floorHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return floorHandler{h: f.h.WithAttrs(attrs), min: f.min}
}

func (f floorHandler) WithGroup(name string) slog.Handler {
	return floorHandler{h: f.h.WithGroup(name), min: f.min}
}
