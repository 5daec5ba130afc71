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

// AuditAppend implements [audit.Store]. The transaction reads the head
// with SELECT … FOR UPDATE, so an append from any other connection, process
// or machine waits at that read until this one commits, and then reads the
// head this one wrote: no two appends see the same head. A head row that was
// deleted is put back first (empty), so that there is always one to lock.
// The row, the head and the mark are written in one statement, so that an
// append costs the round trips it did before there was a mark.
func (s *PGStore) AuditAppend(ctx context.Context, next func(audit.Heads) (audit.Row, audit.Head, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		heads, err := lockHeads(ctx, tx)
		if err != nil {
			return err
		}
		row, head, err := next(heads)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH
			appended AS (INSERT INTO audit_log (`+auditColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)),
			moved AS (UPDATE audit_head SET seq = $14, first_seq = $15, length = $16, mac = $17, seal = $18 WHERE id = 1)
			INSERT INTO audit_mark (id, seq, first_seq, length, mac, seal) VALUES (1, $14, $15, $16, $17, $18)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, first_seq = excluded.first_seq,
				length = excluded.length, mac = excluded.mac, seal = excluded.seal`,
			row.Seq, row.Time.UnixNano(), string(row.Action), row.Purpose, row.RunID, row.Method, row.Host, row.Path,
			row.Status, row.OK, row.Reason, int64(row.Duration), row.MAC,
			head.Seq, head.First, head.Length, head.MAC, head.Seal); err != nil {
			return fmt.Errorf("sqlstore: appending audit row: %w", err)
		}
		return nil
	})
}

// lockHeads locks the head's row and then reads the head and the mark. Two
// statements: a statement that waited for the lock sees the new version of
// the row it locked, but of the mark it would see the version from before
// the wait, the one the last append replaced.
func lockHeads(ctx context.Context, tx pgx.Tx) (audit.Heads, error) {
	for range 2 {
		tag, err := tx.Exec(ctx, `SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE`)
		if err != nil {
			return audit.Heads{}, fmt.Errorf("sqlstore: locking the audit head: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return readPGHeads(ctx, tx)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_head (id, seq) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
			return audit.Heads{}, fmt.Errorf("sqlstore: putting back the audit head: %w", err)
		}
	}
	return audit.Heads{}, fmt.Errorf("sqlstore: locking the audit head: %w", errNoAuditHead)
}

// errNoAuditHead means the audit_head row vanished again as soon as it was
// put back.
var errNoAuditHead = errors.New("the audit_head row is missing")

// AuditHeads implements [audit.Store].
func (s *PGStore) AuditHeads(ctx context.Context) (audit.Heads, error) {
	return readPGHeads(ctx, s.pool)
}

type pgRowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readPGHeads(ctx context.Context, q pgRowQuerier) (audit.Heads, error) {
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
