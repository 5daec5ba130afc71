package sqlstore

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/agent"
)

// RunCountByStatus returns the number of runs in each status, in one query
// (an index leading with status answers it). Statuses no run is in are
// absent.
func (s *Store) RunCountByStatus(ctx context.Context) (map[agent.Status]int64, error) {
	rs, err := s.d.query(ctx, `SELECT status, COUNT(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: counting runs: %w", err)
	}
	defer rs.Close()
	return countMap(rs)
}

type statusCount struct {
	status agent.Status
	n      int64
}

// countMap reads SELECT status, COUNT(*) rows into a map.
func countMap(rs rows) (map[agent.Status]int64, error) {
	list, err := collect(rs, "counting runs", func(sc scanner) (statusCount, error) {
		var c statusCount
		var status string
		err := sc.Scan(&status, &c.n)
		c.status = agent.Status(status)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[agent.Status]int64, len(list))
	for _, c := range list {
		out[c.status] = c.n
	}
	return out, nil
}
