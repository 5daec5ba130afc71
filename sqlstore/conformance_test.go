package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/storetest"
	"github.com/andonhq/andon/token"
)

// The shared suites, on each backend, each test on a fresh database. After
// each, active_runs must still say which runs are unfinished.

// withFreshStores runs fn, in parallel, once per backend, with a
// constructor of stores on fresh databases.
func withFreshStores(t *testing.T, fn func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, func(t *testing.T) *sqlstore.Store { return checkedActiveRuns(t, b.database(t)(t)) })
		})
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.Exercise(t, func(t *testing.T) storetest.Store { return fresh(t) })
	})
}

func TestRunsConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseRuns(t, func(t *testing.T) agent.Store { return fresh(t) })
	})
}

func TestRunCountsConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseRunCounts(t, func(t *testing.T) storetest.RunCounter { return fresh(t) })
	})
}

func TestToolSettingsConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseToolSettings(t, func(t *testing.T) catalogue.SettingsStore { return fresh(t) })
	})
}

func TestTokensConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseTokens(t, func(t *testing.T) token.Store { return fresh(t) })
	})
}

// RunStatuses sends its ids as one parameter, so neither SQLite's limit on
// bound parameters (32766 by default) nor PostgreSQL's (65535) applies, and
// the watcher's poll stays one query.
func TestRunStatusesTakesAnyNumberOfIDs(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := t.Context()
		s := open(t)
		if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice"}); err != nil {
			t.Fatal(err)
		}
		ids := []string{"r1"}
		for i := range 70_000 {
			ids = append(ids, fmt.Sprintf("gone-%d", i))
		}
		got, err := s.RunStatuses(ctx, ids)
		if err != nil || len(got) != 1 || got["r1"] != agent.StatusQueued {
			t.Fatalf("RunStatuses(%d ids) = %v, %v; want r1 queued", len(ids), got, err)
		}
	})
}

func TestTasksConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseTasks(t, func(t *testing.T) storetest.TaskStore { return fresh(t) })
	})
}

func TestInputsConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseInputs(t, func(t *testing.T) storetest.InputStore { return fresh(t) })
	})
}

func TestRunCancelConformance(t *testing.T) {
	t.Parallel()
	withFreshStores(t, func(t *testing.T, fresh func(t *testing.T) *sqlstore.Store) {
		storetest.ExerciseRunCancel(t, func(t *testing.T) storetest.CancelStore { return fresh(t) })
	})
}

// checkedActiveRuns returns s, checking when t ends (before s is closed)
// that active_runs holds exactly the unfinished runs, with their status:
// the shared suites take runs through every transition.
func checkedActiveRuns(t *testing.T, s *sqlstore.Store) *sqlstore.Store {
	t.Cleanup(func() {
		if diff := s.ActiveRunsDiffer(t); diff != "" {
			t.Errorf("after the test, active_runs differs from runs: %s", diff)
		}
	})
	return s
}
