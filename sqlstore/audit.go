package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/andonhq/andon/audit"
)

var _ audit.Store = (*Store)(nil)

const auditColumns = `seq, time_ns, action, purpose, run_id, method, host, path, status, ok, reason, duration_ns, mac`

// AuditAppend implements [audit.Store]. The dialect's lockHeads keeps
// every other append — from any connection, process or machine — from
// reading the heads until this one commits, so no two appends see the same
// head.
func (s *Store) AuditAppend(ctx context.Context, next func(audit.Heads) (audit.Row, audit.Head, error)) error {
	return s.d.inTx(ctx, func(tx tx) error {
		heads, err := s.d.lockHeads(ctx, tx)
		if err != nil {
			return err
		}
		row, head, err := next(heads)
		if err != nil {
			return err
		}
		return s.d.writeAudit(ctx, tx, row, head)
	})
}

// auditArgs are the values of row's auditColumns.
func auditArgs(row audit.Row) []any {
	return []any{row.Seq, row.Time.UnixNano(), string(row.Action), row.Purpose, row.RunID, row.Method, row.Host, row.Path,
		row.Status, row.OK, row.Reason, int64(row.Duration), row.MAC}
}

// AuditHeads implements [audit.Store].
func (s *Store) AuditHeads(ctx context.Context) (audit.Heads, error) {
	return readHeads(ctx, s.d)
}

// headsQuery reads the head and the mark in one statement (either may be
// missing), the same on both backends.
const headsQuery = `SELECT COALESCE(h.seq, 0), COALESCE(h.first_seq, 0), COALESCE(h.length, 0), h.mac, h.seal,
		COALESCE(m.seq, 0), COALESCE(m.first_seq, 0), COALESCE(m.length, 0), m.mac, m.seal
	FROM (SELECT 1 AS id) AS one
	LEFT JOIN audit_head AS h ON h.id = one.id
	LEFT JOIN audit_mark AS m ON m.id = one.id`

func readHeads(ctx context.Context, q querier) (audit.Heads, error) {
	var hs audit.Heads
	h, m := &hs.Head, &hs.Mark
	if err := q.queryRow(ctx, headsQuery).Scan(&h.Seq, &h.First, &h.Length, &h.MAC, &h.Seal,
		&m.Seq, &m.First, &m.Length, &m.MAC, &m.Seal); err != nil {
		return audit.Heads{}, fmt.Errorf("sqlstore: reading audit head: %w", err)
	}
	return hs, nil
}

// AuditRows implements [audit.Store].
func (s *Store) AuditRows(ctx context.Context, q audit.Query) ([]audit.Row, error) {
	where := []string{"seq > ?"}
	args := []any{q.AfterSeq}
	if q.RunID != "" {
		where = append(where, "run_id = ?")
		args = append(args, q.RunID)
	}
	if q.Action != "" {
		where = append(where, "action = ?")
		args = append(args, string(q.Action))
	}
	if q.BeforeSeq != 0 {
		where = append(where, "seq < ?")
		args = append(args, q.BeforeSeq)
	}
	stmt := `SELECT ` + auditColumns + ` FROM audit_log WHERE ` + strings.Join(where, " AND ") + ` ORDER BY seq`
	if q.Newest {
		stmt += ` DESC`
	}
	if q.Limit > 0 {
		stmt += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	rs, err := s.d.query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing audit rows: %w", err)
	}
	defer rs.Close()
	return collect(rs, "listing audit rows", scanAuditRow)
}
