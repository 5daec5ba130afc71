package agent_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// logTap is a slog handler that hands the test every record it receives,
// debug included, so a test can wait for the watcher to have acted.
type logTap struct{ records chan slog.Record }

func newLogTap() *logTap { return &logTap{records: make(chan slog.Record, 1024)} }

func (l *logTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTap) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.records <- r.Clone():
	default: // a test that stops listening must not block the code under test
	}
	return nil
}
func (l *logTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logTap) WithGroup(string) slog.Handler      { return l }

// waitFor returns the first record, from now on, whose message contains msg
// and whose run attribute is run (a deadline only keeps a broken test from
// hanging).
func (l *logTap) waitFor(t *testing.T, msg, run string) tapped {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-l.records:
			if !strings.Contains(r.Message, msg) {
				continue
			}
			found := false
			r.Attrs(func(a slog.Attr) bool {
				found = found || (a.Key == "run" && a.Value.String() == run)
				return !found
			})
			if found {
				return tapped(r)
			}
		case <-deadline:
			t.Fatalf("nothing logged %q for run %s", msg, run)
		}
	}
}

// tapped is a record logTap caught.
type tapped slog.Record

// attr returns the value of the record's attribute key, or "".
func (r tapped) attr(key string) string {
	v := ""
	slog.Record(r).Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}
