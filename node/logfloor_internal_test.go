package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestQuieterDropsInfo: the logger River gets drops its info chatter (the
// "producer: job counts" lines) and keeps its warnings, also through With
// and WithGroup; with -v (a debug logger) it keeps everything.
func TestQuieterDropsInfo(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	q := quieter(base, slog.LevelWarn)
	q.Info("producer: job counts")
	q.With("queue", "default").WithGroup("g").Info("producer: job counts")
	q.With("queue", "default").WithGroup("g").Warn("elector: lost leadership")
	out := buf.String()
	if strings.Contains(out, "job counts") {
		t.Errorf("info records got through:\n%s", out)
	}
	if !strings.Contains(out, "lost leadership") || !strings.Contains(out, "queue=default") {
		t.Errorf("the warning, with its attributes, is missing:\n%s", out)
	}

	buf.Reset()
	verbose := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	quieter(verbose, slog.LevelWarn).Info("producer: job counts")
	if !strings.Contains(buf.String(), "job counts") {
		t.Errorf("with -v, River's info was dropped: %q", buf.String())
	}
}
