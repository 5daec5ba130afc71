package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

func approval(run string, step, call int, digest string, approved bool, by string) *agent.Approval {
	return &agent.Approval{
		CallRef: agent.CallRef{RunID: run, Step: step, Call: call, Tool: "mcp_deploy_deploy", ArgsDigest: digest},
		CallID:  "call_0", Approved: approved, By: by, At: at(time.Duration(step)*time.Second + 7*time.Millisecond),
	}
}

func approvalDiff(got, want *agent.Approval) string {
	if got.CallRef != want.CallRef || got.CallID != want.CallID || got.Approved != want.Approved ||
		got.By != want.By || got.Override != want.Override || !got.At.Equal(want.At) || got.Identity != want.Identity {
		return fmt.Sprintf("decision = %+v, want %+v", *got, *want)
	}
	return ""
}

func listApprovals(t *testing.T, s agent.Store, run string) []*agent.Approval {
	t.Helper()
	list, err := s.ApprovalList(t.Context(), run)
	if err != nil {
		t.Fatalf("ApprovalList(%s): %v", run, err)
	}
	return list
}

func mustHaveApprovals(t *testing.T, s agent.Store, run string, want ...*agent.Approval) {
	t.Helper()
	got := listApprovals(t, s, run)
	if len(got) != len(want) {
		t.Fatalf("ApprovalList(%s) has %d decisions, want %d: %v", run, len(got), len(want), got)
	}
	for i := range want {
		if d := approvalDiff(got[i], want[i]); d != "" {
			t.Fatalf("decision %d: %s", i, d)
		}
	}
}

// A decision comes back with everything it names: the call (run, step,
// position, tool, digest), who decided, whether it was an override, when.
func testApprovalRoundTrip(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	later := approval("r1", 5, 1, "sha256:bb", false, "bob")
	first := approval("r1", 2, 2, "sha256:aa", true, "root")
	first.Override = true
	second := approval("r1", 2, 3, "sha256:aa", true, "carol")
	for _, a := range []*agent.Approval{later, second, first} {
		ok, err := s.ApprovalRecord(ctx, a, "w1")
		mustWin(t, fmt.Sprintf("ApprovalRecord(step %d call %d)", a.Step, a.Call), ok, err)
	}
	mustHaveApprovals(t, s, "r1", first, second, later) // by step, then call
	if got := listApprovals(t, s, "r2"); len(got) != 0 {
		t.Fatalf("ApprovalList of a run with none = %v", got)
	}
}

// Only the segment holding a running run records a decision on it: not
// another owner, not an empty one, not on a waiting or a cancelled run.
func testApprovalNeedsTheLease(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	a := approval("r1", 1, 1, "sha256:aa", true, "alice")
	ok, err := s.ApprovalRecord(ctx, a, "w2")
	mustLose(t, "ApprovalRecord by a non-owner", ok, err)
	ok, err = s.ApprovalRecord(ctx, a, "")
	mustRefuse(t, "ApprovalRecord with an empty owner", ok, err)
	insertWaiting(t, s, "r2", "w1", []byte(`{"step":1}`))
	ok, err = s.ApprovalRecord(ctx, approval("r2", 1, 1, "sha256:aa", true, "alice"), "w1")
	mustLose(t, "ApprovalRecord on a waiting run (its lease released)", ok, err)
	ok, err = s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	ok, err = s.ApprovalRecord(ctx, a, "w1")
	mustLose(t, "ApprovalRecord on a cancelled run by its last owner", ok, err)
	ok, err = s.ApprovalRecord(ctx, approval("gone", 1, 1, "sha256:aa", true, "alice"), "w1")
	mustLose(t, "ApprovalRecord on a run that does not exist", ok, err)
	mustHaveApprovals(t, s, "r1")
	mustHaveApprovals(t, s, "r2")
}

// A call is decided once: a second decision on the same run, step and
// position — whatever it says, whatever digest it names — changes
// nothing, and of concurrent decisions exactly one lands. The same
// position of another run is another call.
func testApprovalOncePerCall(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	insertRunning(t, s, "r2", "w1", at(time.Hour))
	first := approval("r1", 3, 1, "sha256:staging", true, "alice")
	ok, err := s.ApprovalRecord(ctx, first, "w1")
	mustWin(t, "the first decision", ok, err)
	ok, err = s.ApprovalRecord(ctx, approval("r1", 3, 1, "sha256:production", false, "bob"), "w1")
	mustLose(t, "a second decision on the same call", ok, err)
	mustHaveApprovals(t, s, "r1", first)

	var decided [racers]*agent.Approval
	winners := race(t, racers, func(i int) (bool, error) {
		decided[i] = approval("r1", 4, 1, fmt.Sprintf("sha256:%02d", i), i%2 == 0, fmt.Sprintf("op%d", i))
		return s.ApprovalRecord(ctx, decided[i], "w1")
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent decisions on one call: %v landed, want exactly one", racers, winners)
	}
	mustHaveApprovals(t, s, "r1", first, decided[winners[0]])

	other := approval("r2", 3, 1, "sha256:production", false, "bob")
	ok, err = s.ApprovalRecord(ctx, other, "w1")
	mustWin(t, "the same position in another run", ok, err)
	mustHaveApprovals(t, s, "r2", other)
}

// An approval given for the call on a tool that has become another (its
// identity changed) is replaced by the decision on the call as it is now;
// a decision for the same identity, or after a denial, still changes
// nothing: one decision per call.
func testApprovalForARedefinedTool(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	stale := approval("r1", 3, 1, "sha256:aa", true, "alice")
	stale.Identity = "sha256:old-server"
	ok, err := s.ApprovalRecord(ctx, stale, "w1")
	mustWin(t, "the first approval", ok, err)
	same := approval("r1", 3, 1, "sha256:aa", false, "bob")
	same.Identity = "sha256:old-server"
	ok, err = s.ApprovalRecord(ctx, same, "w1")
	mustLose(t, "a second decision for the same identity", ok, err)
	fresh := approval("r1", 3, 1, "sha256:aa", true, "carol")
	fresh.Identity = "sha256:new-server"
	ok, err = s.ApprovalRecord(ctx, fresh, "w1")
	mustWin(t, "the decision on the redefined tool", ok, err)
	mustHaveApprovals(t, s, "r1", fresh)

	denied := approval("r1", 4, 1, "sha256:aa", false, "alice")
	denied.Identity = "sha256:old-server"
	ok, err = s.ApprovalRecord(ctx, denied, "w1")
	mustWin(t, "a denial", ok, err)
	after := approval("r1", 4, 1, "sha256:aa", true, "bob")
	after.Identity = "sha256:new-server"
	ok, err = s.ApprovalRecord(ctx, after, "w1")
	mustLose(t, "an approval after a denial, for another identity", ok, err)
	mustHaveApprovals(t, s, "r1", fresh, denied)
}
