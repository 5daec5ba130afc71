package interop

import (
	"os"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// knownBugsEnv, set to 1, runs the tests of client bugs this package found
// that are not fixed yet. They fail until the bug is fixed; without it they
// skip, so that the suite stays green while the fix is pending.
const knownBugsEnv = "ANDON_INTEROP_KNOWN_BUGS"

func knownBug(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(knownBugsEnv) != "1" {
		t.Skipf("known client bug, not fixed yet: %s (set %s=1 to run this test; it fails until the bug is fixed)", what, knownBugsEnv)
	}
}

// TestProgressBeforeResultIsDelivered: every progress notification the
// server sends before its result must reach OnProgress before CallTool
// returns.
//
// The go-sdk handler sends each notification synchronously, before it
// returns, so the notification is on the wire before the response. andon's
// reader queues the progress (call.pushProgress) before it hands over the
// reply, but Client.exchange waits in a select on both cl.reply and
// cl.progSig; when both are ready, Go picks one at random, and on the reply
// case it returns without draining cl.progress. The last progress of a call
// is therefore lost now and then (observed: 0.3-3% of calls with one
// progress step and no pause, on a 2-core machine). The fix: drain
// takeProgress() into onProgress before returning a reply.
func TestProgressBeforeResultIsDelivered(t *testing.T) {
	t.Parallel()
	knownBug(t, "progress that arrives just before the result is dropped (mcp/call.go, Client.exchange)")
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			c, _ := andonToGoSDK(t, rev)
			const calls = 1000
			lost := 0
			for range calls {
				n := 0
				_, err := c.CallTool(t.Context(), "progress", map[string]any{"count": 1}, &mcp.CallOptions{
					OnProgress: func(mcp.Progress) { n++ },
				})
				if err != nil {
					t.Fatalf("calling progress: %v", err)
				}
				if n != 1 {
					lost++
				}
			}
			if lost > 0 {
				t.Errorf("%d of %d calls returned without delivering the progress notification the server sent before its result", lost, calls)
			}
		})
	}
}
