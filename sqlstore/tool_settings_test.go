package sqlstore_test

import (
	"testing"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/sqlstore/storetest"
)

func TestToolSettingsConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.ExerciseToolSettings(t, func(t *testing.T) catalogue.SettingsStore { return b.database(t)(t).(catalogue.SettingsStore) })
		})
	}
}
