package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// Renewing the leases of many runs is one statement per thousand leases,
// whatever the number of runs: a process's renewer costs the store one
// statement per interval, not one per run in flight.
func TestRenewingManyLeasesIsOneStatementPerThousand(t *testing.T) {
	t.Parallel()
	onEachCountedBackend(t, func(t *testing.T, s *sqlstore.Store, c *sqlstore.StatementCounter) {
		ctx := t.Context()
		const n = 1500
		leases := make([]agent.Lease, n)
		for i := range leases {
			id := fmt.Sprintf("r%04d", i)
			run := &agent.Run{ID: id, Owner: "alice", Request: []byte(`{"prompt":"p"}`), Status: agent.StatusRunning,
				LeaseOwner: "w1", LeaseExpires: time.Now().Add(time.Minute)}
			if err := s.RunInsert(ctx, run); err != nil {
				t.Fatal(err)
			}
			leases[i] = agent.Lease{RunID: id, Owner: "w1"}
		}
		for _, k := range []int{1, 600, n} {
			before := c.Read()
			renewed, err := s.RunRenewLeases(ctx, leases[:k], time.Now().Add(time.Hour))
			if err != nil || len(renewed) != k {
				t.Fatalf("RunRenewLeases(%d) renewed %d, %v", k, len(renewed), err)
			}
			got := c.Read().Sub(before)
			if want := uint64((k + 999) / 1000); got.Statements != want || got.Writes != want {
				t.Errorf("renewing %d leases took %d statements (%d writes); want %d", k, got.Statements, got.Writes, want)
			}
		}
	})
}
