package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/andonhq/andon/audit"
	"github.com/jackc/pgx/v5"
)

var _ audit.Store = (*PGStore)(nil)

// AuditAppend implements [audit.Store]. The transaction locks the head's
// row (SELECT … FOR UPDATE), so an append from any other connection,
// process or machine waits there until this one commits, and then reads the
// head this one wrote: no two appends see the same head. The row is put
// back first if it was deleted, so that there is always one to lock.
func (s *PGStore) AuditAppend(ctx context.Context, next func(audit.Heads) (audit.Row, audit.Head, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO audit_head (id, seq) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
			return fmt.Errorf("sqlstore: locking the audit head: %w", err)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE`); err != nil {
			return fmt.Errorf("sqlstore: locking the audit head: %w", err)
		}
		heads, err := s.readHeads(ctx, tx)
		if err != nil {
			return err
		}
		row, head, err := next(heads)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (`+auditColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			row.Seq, row.Time.UnixNano(), string(row.Action), row.Purpose, row.RunID, row.Method, row.Host, row.Path,
			row.Status, row.OK, row.Reason, int64(row.Duration), row.MAC); err != nil {
			return fmt.Errorf("sqlstore: appending audit row: %w", err)
		}
		for _, table := range []string{"audit_head", "audit_mark"} {
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (id, seq, first_seq, length, mac, seal) VALUES (1, $1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, first_seq = excluded.first_seq,
					length = excluded.length, mac = excluded.mac, seal = excluded.seal`,
				head.Seq, head.First, head.Length, head.MAC, head.Seal); err != nil {
				return fmt.Errorf("sqlstore: moving %s: %w", table, err)
			}
		}
		return nil
	})
}

// AuditHeads implements [audit.Store].
func (s *PGStore) AuditHeads(ctx context.Context) (audit.Heads, error) {
	return s.readHeads(ctx, s.pool)
}

type pgRowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *PGStore) readHeads(ctx context.Context, q pgRowQuerier) (audit.Heads, error) {
	var hs audit.Heads
	h, m := &hs.Head, &hs.Mark
	if err := q.QueryRow(ctx, headsQuery).Scan(&h.Seq, &h.First, &h.Length, &h.MAC, &h.Seal,
		&m.Seq, &m.First, &m.Length, &m.MAC, &m.Seal); err != nil {
		return audit.Heads{}, fmt.Errorf("sqlstore: reading audit head: %w", err)
	}
	return hs, nil
}

// AuditRows implements [audit.Store].
func (s *PGStore) AuditRows(ctx context.Context, q audit.Query) ([]audit.Row, error) {
	var args pgArgs
	where := []string{"seq > " + args.add(q.AfterSeq)}
	if q.RunID != "" {
		where = append(where, "run_id = "+args.add(q.RunID))
	}
	if q.Action != "" {
		where = append(where, "action = "+args.add(string(q.Action)))
	}
	if q.BeforeSeq != 0 {
		where = append(where, "seq < "+args.add(q.BeforeSeq))
	}
	stmt := `SELECT ` + auditColumns + ` FROM audit_log WHERE ` + strings.Join(where, " AND ") + ` ORDER BY seq`
	if q.Newest {
		stmt += ` DESC`
	}
	if q.Limit > 0 {
		stmt += ` LIMIT ` + args.add(q.Limit)
	}
	rows, err := s.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing audit rows: %w", err)
	}
	defer rows.Close()
	return collect(rows, "listing audit rows", scanAuditRow)
}
