package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
)

// maxRenewBatch bounds the leases one renewal statement names: a process
// holding more renews them in a few statements, each short enough not to
// keep the writer from a cancel for long.
const maxRenewBatch = 1000

// RunRenewLeases implements [agent.Store]: RunRenewLease for every lease
// of leases, maxRenewBatch of them per statement. The guard is
// RunRenewLease's, row by row — the pair (run, owner) must match and the
// run must be held — so a lease another segment took over, or a run that
// was cancelled meanwhile, is not renewed and not returned. A lease with
// an empty owner is skipped: it holds nothing.
func (s *Store) RunRenewLeases(ctx context.Context, leases []agent.Lease, leaseUntil time.Time) ([]string, error) {
	if leaseUntil.IsZero() {
		return nil, fmt.Errorf("sqlstore: renewing %d leases: %w", len(leases), errNoLease)
	}
	var renewed []string
	for len(leases) > 0 {
		chunk := leases[:min(len(leases), maxRenewBatch)]
		leases = leases[len(chunk):]
		ids, owners := make([]string, 0, len(chunk)), make([]string, 0, len(chunk))
		for _, l := range chunk {
			if l.Owner != "" {
				ids, owners = append(ids, l.RunID), append(owners, l.Owner)
			}
		}
		if len(ids) == 0 {
			continue
		}
		in, args := s.d.pairIn(ids, owners)
		rs, err := s.d.query(ctx, `UPDATE runs SET lease_expires = ?
			WHERE (id, lease_owner) `+in+` AND status IN `+held+`
			RETURNING id`,
			append([]any{nanos(leaseUntil)}, args...)...)
		if err != nil {
			return renewed, fmt.Errorf("sqlstore: renewing %d leases: %w", len(ids), err)
		}
		got, err := collect(rs, "renewing leases", scanID)
		if cerr := rs.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return renewed, err
		}
		renewed = append(renewed, got...)
	}
	return renewed, nil
}
