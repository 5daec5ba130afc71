package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/andonhq/andon/audit"
	"github.com/jackc/pgx/v5"
)

var _ audit.Store = (*PGStore)(nil)

// errNoAuditHead means the audit_head row, which the migration creates, is
// gone: there is nothing to lock appends on.
var errNoAuditHead = errors.New("the audit_head row is missing")

// AuditAppend implements [audit.Store]. The transaction reads the head with
// SELECT … FOR UPDATE, so an append from any other connection, process or
// machine waits at that read until this one commits, and then reads the
// head this one wrote: no two appends see the same head.
func (s *PGStore) AuditAppend(ctx context.Context, next func(head audit.Head) (audit.Row, audit.Head, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var head audit.Head
		err := tx.QueryRow(ctx, `SELECT seq, mac, seal FROM audit_head WHERE id = 1 FOR UPDATE`).Scan(&head.Seq, &head.MAC, &head.Seal)
		if errors.Is(err, pgx.ErrNoRows) {
			err = errNoAuditHead
		}
		if err != nil {
			return fmt.Errorf("sqlstore: locking the audit head: %w", err)
		}
		row, newHead, err := next(head)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (`+auditColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			row.Seq, row.Time.UnixNano(), string(row.Action), row.Purpose, row.RunID, row.Method, row.Host, row.Path,
			row.Status, row.OK, row.Reason, int64(row.Duration), row.MAC); err != nil {
			return fmt.Errorf("sqlstore: appending audit row: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE audit_head SET seq = $1, mac = $2, seal = $3 WHERE id = 1`,
			newHead.Seq, newHead.MAC, newHead.Seal); err != nil {
			return fmt.Errorf("sqlstore: moving audit head: %w", err)
		}
		return nil
	})
}

// AuditHead implements [audit.Store]: the zero Head for an empty log.
func (s *PGStore) AuditHead(ctx context.Context) (audit.Head, error) {
	var h audit.Head
	err := s.pool.QueryRow(ctx, `SELECT seq, mac, seal FROM audit_head WHERE id = 1`).Scan(&h.Seq, &h.MAC, &h.Seal)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Head{}, nil
	}
	if err != nil {
		return audit.Head{}, fmt.Errorf("sqlstore: reading audit head: %w", err)
	}
	return h, nil
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
