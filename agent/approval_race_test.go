package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// raceStore cancels a run between the steps of a decision: right before
// the step named by at, an operator cancels the run (the runtime's own
// Cancel, as the API's cancel is), or, with fail, the step fails as a
// store does.
type raceStore struct {
	*countingStore
	mu     sync.Mutex
	at     string // "RunResume", "ApprovalRecord" or "RunRequeue"; "" for none
	fail   bool
	cancel func(runID string)
}

var errDiskOnFire = errors.New("disk on fire")

// step runs before the store's step called name, on run id.
func (s *raceStore) step(name, id string) error {
	s.mu.Lock()
	hit, fail, cancel := s.at == name, s.fail, s.cancel
	if hit {
		s.at = "" // once
	}
	s.mu.Unlock()
	switch {
	case hit && fail:
		return errDiskOnFire
	case hit:
		cancel(id)
	}
	return nil
}

func (s *raceStore) RunResume(ctx context.Context, id string, from agent.Status, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := s.step("RunResume", id); err != nil {
		return nil, err
	}
	return s.countingStore.RunResume(ctx, id, from, owner, leaseUntil)
}

func (s *raceStore) ApprovalRecord(ctx context.Context, a *agent.Approval, owner string) (bool, error) {
	if err := s.step("ApprovalRecord", a.RunID); err != nil {
		return false, err
	}
	return s.countingStore.ApprovalRecord(ctx, a, owner)
}

func (s *raceStore) RunRequeue(ctx context.Context, id, owner string) (bool, error) {
	if err := s.step("RunRequeue", id); err != nil {
		return false, err
	}
	return s.countingStore.RunRequeue(ctx, id, owner)
}

// An approval that loses its race with a cancel — the cancel lands between
// any two of the decision's steps — is refused with ErrFinished (the API's
// 409), never a failure, and the call is not made; a store that fails
// during the decision is a failure (the API's 500), not a conflict.
func TestAnApprovalThatLosesToACancelIsAConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at        string
		elsewhere bool // ResumeElsewhere: the decision hands the run to the queue
		fail      bool
	}{
		{at: "RunResume"},
		{at: "ApprovalRecord"},
		{at: "ApprovalRecord", elsewhere: true},
		{at: "RunRequeue", elsewhere: true},
		{at: "ApprovalRecord", fail: true},
		{at: "RunRequeue", elsewhere: true, fail: true},
	} {
		name := tc.at
		if tc.elsewhere {
			name += "/elsewhere"
		}
		if tc.fail {
			name += "/fails"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var rs *raceStore
			b := setup(t, func(c *agent.Config) {
				rs = &raceStore{countingStore: c.Store.(*countingStore)}
				c.Store, c.ResumeElsewhere = rs, tc.elsewhere
			})
			admin := agent.Actor{ID: "root", Admin: true}
			tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
			b.start()
			run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "deployed"})
			b.waitStatus(run.ID, agent.StatusWaitingForApproval)
			rs.mu.Lock()
			rs.at, rs.fail = tc.at, tc.fail
			rs.cancel = func(id string) {
				if err := b.rt.Cancel(context.Background(), admin, id); err != nil {
					t.Errorf("the racing cancel: %v", err)
				}
			}
			rs.mu.Unlock()

			err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID)
			conflict := errors.Is(err, agent.ErrFinished) || errors.Is(err, agent.ErrNotWaiting)
			switch {
			case tc.fail && (!errors.Is(err, errDiskOnFire) || conflict):
				t.Fatalf("Approve with %s failing = %v, want the store's failure, not a conflict", tc.at, err)
			case tc.fail:
				return
			case !errors.Is(err, agent.ErrFinished):
				t.Fatalf("Approve cancelled before %s = %v, want ErrFinished (a conflict, 409)", tc.at, err)
			}
			got := b.waitStatus(run.ID, agent.StatusCancelled)
			if n := tool.calls.Load(); n != 0 || got.Status != agent.StatusCancelled {
				t.Errorf("after the lost race: run %s, %d calls made; want cancelled and none", got.Status, n)
			}
		})
	}
}
