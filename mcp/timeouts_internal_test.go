package mcp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// timeoutFor starts an idle timeout of d on ts and returns the context it
// ends.
func timeoutFor(t *testing.T, ts *timeouts, d time.Duration) (context.Context, *timeout) {
	t.Helper()
	ctx, stop := context.WithCancelCause(context.Background())
	t.Cleanup(func() { stop(nil) })
	to := &timeout{stop: stop}
	ts.start(to, d)
	return ctx, to
}

// awaitTimeout fails the test unless ctx ends with errCallTimeout; the
// bound only keeps a broken timer from hanging the test.
func awaitTimeout(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: its timeout never ended it", what)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errCallTimeout) {
		t.Fatalf("%s ended with %v, want errCallTimeout", what, cause)
	}
}

// A request that starts while the shared timer is armed for a later
// deadline re-arms it for its own, earlier one.
func TestTimeoutsEarlierDeadlineRearms(t *testing.T) {
	ts := newTimeouts()
	defer ts.idle()
	long, longT := timeoutFor(t, ts, time.Hour)
	defer ts.stop(longT)
	short, shortT := timeoutFor(t, ts, 20*time.Millisecond)
	defer ts.stop(shortT)
	awaitTimeout(t, short, "the short request")
	if long.Err() != nil {
		t.Fatalf("the hour-long request ended too: %v", context.Cause(long))
	}
}

// Once the timer has ended the requests that were due, it re-arms for the
// next one, which ends in its turn.
func TestTimeoutsFireRearmsForTheNext(t *testing.T) {
	ts := newTimeouts()
	defer ts.idle()
	first, firstT := timeoutFor(t, ts, 10*time.Millisecond)
	defer ts.stop(firstT)
	second, secondT := timeoutFor(t, ts, 60*time.Millisecond)
	defer ts.stop(secondT)
	awaitTimeout(t, first, "the first request")
	awaitTimeout(t, second, "the second request")
}

// A request that has ended is never ended by the timer afterwards, and a
// restarted one counts from its restart.
func TestTimeoutsStoppedAndRestarted(t *testing.T) {
	ts := newTimeouts()
	defer ts.idle()
	ended, endedT := timeoutFor(t, ts, 10*time.Millisecond)
	ts.stop(endedT)
	restarted, restartedT := timeoutFor(t, ts, 10*time.Millisecond)
	defer ts.stop(restartedT)
	ts.restart(restartedT, time.Hour)
	witness, witnessT := timeoutFor(t, ts, 30*time.Millisecond)
	defer ts.stop(witnessT)
	awaitTimeout(t, witness, "the witness")
	if ended.Err() != nil {
		t.Errorf("a request that had ended was ended by the timer: %v", context.Cause(ended))
	}
	if restarted.Err() != nil {
		t.Errorf("a restarted request ended on its first deadline: %v", context.Cause(restarted))
	}
}
