package sqlstore_test

import (
	"testing"

	"github.com/andonhq/andon/sqlstore/storetest"
)

func TestRunCountsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRunCounts(t, func(t *testing.T) storetest.RunCounter { return openStore(t) })
}

func TestPostgresRunCountsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRunCounts(t, func(t *testing.T) storetest.RunCounter { return openPG(t) })
}
