package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/vault"
	"github.com/jackc/pgx/v5"
)

var _ vault.Backend = (*PGStore)(nil)

// SecretGet implements [vault.Backend].
func (s *PGStore) SecretGet(ctx context.Context, name string) (vault.Record, error) {
	rec, err := pgScanSecret(s.pool.QueryRow(ctx, `SELECT `+secretColumns+` FROM secrets WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return vault.Record{}, vault.ErrNotFound
	}
	if err != nil {
		return vault.Record{}, fmt.Errorf("sqlstore: reading secret: %w", err)
	}
	return rec, nil
}

// SecretPut implements [vault.Backend].
func (s *PGStore) SecretPut(ctx context.Context, rec vault.Record, replace bool) error {
	stmt := `INSERT INTO secrets (` + secretColumns + `) VALUES ($1, $2, $3, $4, $5, $6)`
	if replace {
		stmt += ` ON CONFLICT (name) DO UPDATE SET placement = excluded.placement, hosts = excluded.hosts,
			key_id = excluded.key_id, sealed = excluded.sealed, updated_at = excluded.updated_at`
	} else {
		stmt += ` ON CONFLICT (name) DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, stmt, rec.Name, rec.Placement, nonNil(rec.Hosts), rec.KeyID, rec.Sealed, rec.UpdatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("sqlstore: writing secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return vault.ErrExists
	}
	return nil
}

// SecretDelete implements [vault.Backend].
func (s *PGStore) SecretDelete(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM secrets WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return vault.ErrNotFound
	}
	return nil
}

// SecretList implements [vault.Backend].
func (s *PGStore) SecretList(ctx context.Context) ([]vault.Record, error) {
	return pgListSecrets(ctx, s.pool)
}

// SecretRekey implements [vault.Backend]. The transaction first locks the
// table against writes (SHARE ROW EXCLUSIVE: reads go on, another rekey or
// a put waits), so that, as on SQLite, no record is written between the
// read and the rewrite and every record is rewritten.
func (s *PGStore) SecretRekey(ctx context.Context, reseal func(vault.Record) (vault.Record, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE secrets IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("sqlstore: locking secrets for a rekey: %w", err)
		}
		recs, err := pgListSecrets(ctx, tx)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			next, err := reseal(rec)
			if err != nil {
				return err
			}
			if next.Name != rec.Name {
				return fmt.Errorf("sqlstore: rekey renamed secret %q to %q", rec.Name, next.Name)
			}
			if _, err := tx.Exec(ctx, `UPDATE secrets SET placement = $1, hosts = $2, key_id = $3, sealed = $4, updated_at = $5 WHERE name = $6`,
				next.Placement, nonNil(next.Hosts), next.KeyID, next.Sealed, next.UpdatedAt.UnixNano(), next.Name); err != nil {
				return fmt.Errorf("sqlstore: rewriting secret: %w", err)
			}
		}
		return nil
	})
}

// pgQuerier is what a pool and a transaction have in common.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func pgListSecrets(ctx context.Context, q pgQuerier) ([]vault.Record, error) {
	rows, err := q.Query(ctx, `SELECT `+secretColumns+` FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing secrets: %w", err)
	}
	defer rows.Close()
	return collect(rows, "listing secrets", pgScanSecret)
}

// pgScanSecret reads one row of secretColumns; hosts is a text[].
func pgScanSecret(row scanner) (vault.Record, error) {
	var rec vault.Record
	var updated int64
	if err := row.Scan(&rec.Name, &rec.Placement, &rec.Hosts, &rec.KeyID, &rec.Sealed, &updated); err != nil {
		return vault.Record{}, err
	}
	if len(rec.Hosts) == 0 {
		rec.Hosts = nil
	}
	rec.UpdatedAt = time.Unix(0, updated).UTC()
	return rec, nil
}
