package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore/storetest"
)

func TestRunsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRuns(t, func(t *testing.T) agent.Store { return openStore(t) })
}

// RunStatuses sends its ids as one parameter, so SQLite's limit on bound
// parameters (32766 by default) does not apply and the watcher's poll stays one query.
func TestRunStatusesTakesAnyNumberOfIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"r1"}
	for i := range 33_000 {
		ids = append(ids, fmt.Sprintf("gone-%d", i))
	}
	got, err := s.RunStatuses(ctx, ids)
	if err != nil || len(got) != 1 || got["r1"] != agent.StatusQueued {
		t.Fatalf("RunStatuses(%d ids) = %v, %v; want r1 queued", len(ids), got, err)
	}
}
