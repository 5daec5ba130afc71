package loadtest_test

import (
	"bytes"
	"context"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/loadtest"
)

// The report finds each wave's task in the trace and names the goroutines
// that ran within it.
func TestTraceReportNamesWhatRanInAWave(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ctx, task := trace.NewTask(context.Background(), loadtest.WaveTask)
	done := make(chan struct{})
	go spinInWave(ctx, done)
	<-done
	task.End()
	trace.Stop()

	var out strings.Builder
	if err := loadtest.TraceReport(&buf, &out, loadtest.TraceReportOptions{}); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	if !strings.HasPrefix(report, "wave 0: ") || strings.Contains(report, "wave 1:") {
		t.Fatalf("report %q, want one wave", report)
	}
	if !strings.Contains(report, "spinInWave") {
		t.Fatalf("report does not name the goroutine that ran in the wave:\n%s", report)
	}
}

func spinInWave(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	trace.WithRegion(ctx, "spin", func() {
		for end := time.Now().Add(3 * time.Millisecond); time.Now().Before(end); {
		}
	})
}

// A trace with no wave in it is not andon-load's: the report says so
// rather than printing nothing.
func TestTraceReportWantsWaves(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	trace.Stop()
	err := loadtest.TraceReport(&buf, &strings.Builder{}, loadtest.TraceReportOptions{})
	if err == nil || !strings.Contains(err.Error(), loadtest.WaveTask) {
		t.Fatalf("error %v, want one that names the %q task", err, loadtest.WaveTask)
	}
}
