package mcp

import (
	"context"
	"time"
)

// hurriedGrace bounds each leg of a teardown that is left when the
// caller's context has ended (see [Client.Shutdown]): the wait for a
// subprocess to exit after its stdin closed, or after SIGTERM; the DELETE
// that ends an HTTP session. Small, so that a spent budget is not followed
// by seconds of teardown; not zero, so that a healthy server still gets to
// leave by itself.
const hurriedGrace = 100 * time.Millisecond

// teardownContext returns a context for one leg of a teardown: it ends
// after d, or hurriedGrace after ctx ends, whichever comes first. It
// carries ctx's values, never its cancellation.
func teardownContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	leg, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	// A hurry timer left running when the leg ends early only calls
	// cancel again, a no-op, within hurriedGrace.
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(hurriedGrace, cancel) })
	return leg, func() {
		stop()
		cancel()
	}
}
