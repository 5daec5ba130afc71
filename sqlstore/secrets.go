package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/vault"
)

var _ vault.Backend = (*Store)(nil)

const secretColumns = `name, placement, hosts, key_id, sealed, updated_at`

// SecretGet implements [vault.Backend].
func (s *Store) SecretGet(ctx context.Context, name string) (vault.Record, error) {
	rec, err := scanSecret(s.db.QueryRowContext(ctx, `SELECT `+secretColumns+` FROM secrets WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return vault.Record{}, vault.ErrNotFound
	}
	if err != nil {
		return vault.Record{}, fmt.Errorf("sqlstore: reading secret: %w", err)
	}
	return rec, nil
}

// SecretPut implements [vault.Backend].
func (s *Store) SecretPut(ctx context.Context, rec vault.Record, replace bool) error {
	hosts, err := json.Marshal(nonNil(rec.Hosts))
	if err != nil {
		return err
	}
	stmt := `INSERT INTO secrets (` + secretColumns + `) VALUES (?, ?, ?, ?, ?, ?)`
	if replace {
		stmt += ` ON CONFLICT (name) DO UPDATE SET placement = excluded.placement, hosts = excluded.hosts,
			key_id = excluded.key_id, sealed = excluded.sealed, updated_at = excluded.updated_at`
	} else {
		stmt += ` ON CONFLICT (name) DO NOTHING`
	}
	res, err := s.db.ExecContext(ctx, stmt, rec.Name, rec.Placement, string(hosts), rec.KeyID, rec.Sealed, rec.UpdatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("sqlstore: writing secret: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return vault.ErrExists
	}
	return nil
}

// SecretDelete implements [vault.Backend].
func (s *Store) SecretDelete(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting secret: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return vault.ErrNotFound
	}
	return nil
}

// SecretList implements [vault.Backend].
func (s *Store) SecretList(ctx context.Context) ([]vault.Record, error) {
	return listSecrets(ctx, s.db)
}

// SecretRekey implements [vault.Backend].
func (s *Store) SecretRekey(ctx context.Context, reseal func(vault.Record) (vault.Record, error)) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		recs, err := listSecrets(ctx, tx)
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
			hosts, err := json.Marshal(nonNil(next.Hosts))
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE secrets SET placement = ?, hosts = ?, key_id = ?, sealed = ?, updated_at = ? WHERE name = ?`,
				next.Placement, string(hosts), next.KeyID, next.Sealed, next.UpdatedAt.UnixNano(), next.Name); err != nil {
				return fmt.Errorf("sqlstore: rewriting secret: %w", err)
			}
		}
		return nil
	})
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func listSecrets(ctx context.Context, q querier) ([]vault.Record, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+secretColumns+` FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing secrets: %w", err)
	}
	defer rows.Close()
	return collect(rows, "listing secrets", scanSecret)
}

type scanner interface{ Scan(dest ...any) error }

func scanSecret(row scanner) (vault.Record, error) {
	var rec vault.Record
	var hosts string
	var updated int64
	if err := row.Scan(&rec.Name, &rec.Placement, &hosts, &rec.KeyID, &rec.Sealed, &updated); err != nil {
		return vault.Record{}, err
	}
	if err := json.Unmarshal([]byte(hosts), &rec.Hosts); err != nil {
		return vault.Record{}, fmt.Errorf("secret %q: hosts column: %w", rec.Name, err)
	}
	if len(rec.Hosts) == 0 {
		rec.Hosts = nil
	}
	rec.UpdatedAt = time.Unix(0, updated).UTC()
	return rec, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
