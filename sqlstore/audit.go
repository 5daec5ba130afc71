package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/andonhq/andon/audit"
)

var _ audit.Store = (*Store)(nil)

const auditColumns = `seq, time_ns, action, purpose, run_id, method, host, path, status, ok, reason, duration_ns, mac`

// AuditAppend implements [audit.Store]. The transaction takes SQLite's write
// lock at BEGIN, so appends from other connections and processes wait.
func (s *Store) AuditAppend(ctx context.Context, next func(head audit.Head) (audit.Row, audit.Head, error)) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		head, err := readHead(ctx, tx)
		if err != nil {
			return err
		}
		row, newHead, err := next(head)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			row.Seq, row.Time.UnixNano(), string(row.Action), row.Purpose, row.RunID, row.Method, row.Host, row.Path,
			row.Status, row.OK, row.Reason, int64(row.Duration), row.MAC); err != nil {
			return fmt.Errorf("sqlstore: appending audit row: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_head (id, seq, mac, seal) VALUES (1, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, mac = excluded.mac, seal = excluded.seal`,
			newHead.Seq, newHead.MAC, newHead.Seal); err != nil {
			return fmt.Errorf("sqlstore: moving audit head: %w", err)
		}
		return nil
	})
}

// AuditHead implements [audit.Store].
func (s *Store) AuditHead(ctx context.Context) (audit.Head, error) {
	return readHead(ctx, s.db)
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readHead(ctx context.Context, q rowQuerier) (audit.Head, error) {
	var h audit.Head
	err := q.QueryRowContext(ctx, `SELECT seq, mac, seal FROM audit_head WHERE id = 1`).Scan(&h.Seq, &h.MAC, &h.Seal)
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Head{}, nil
	}
	if err != nil {
		return audit.Head{}, fmt.Errorf("sqlstore: reading audit head: %w", err)
	}
	return h, nil
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
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing audit rows: %w", err)
	}
	defer rows.Close()
	return collect(rows, "listing audit rows", scanAuditRow)
}
