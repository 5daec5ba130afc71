package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/vault"
)

var _ vault.Backend = (*Store)(nil)

const secretColumns = `name, placement, hosts, key_id, sealed, updated_at`

// SecretGet implements [vault.Backend].
func (s *Store) SecretGet(ctx context.Context, name string) (vault.Record, error) {
	rec, err := s.scanSecret(s.d.queryRow(ctx, `SELECT `+secretColumns+` FROM secrets WHERE name = ?`, name))
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
	stmt := `INSERT INTO secrets (` + secretColumns + `) VALUES (?, ?, ?, ?, ?, ?)`
	if replace {
		stmt += ` ON CONFLICT (name) DO UPDATE SET placement = excluded.placement, hosts = excluded.hosts,
			key_id = excluded.key_id, sealed = excluded.sealed, updated_at = excluded.updated_at`
	} else {
		stmt += ` ON CONFLICT (name) DO NOTHING`
	}
	n, err := s.d.exec(ctx, stmt, rec.Name, rec.Placement, s.d.hostsArg(rec.Hosts), rec.KeyID, rec.Sealed, rec.UpdatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("sqlstore: writing secret: %w", err)
	}
	if n == 0 {
		return vault.ErrExists
	}
	return nil
}

// SecretDelete implements [vault.Backend].
func (s *Store) SecretDelete(ctx context.Context, name string) error {
	n, err := s.d.exec(ctx, `DELETE FROM secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting secret: %w", err)
	}
	if n == 0 {
		return vault.ErrNotFound
	}
	return nil
}

// SecretList implements [vault.Backend].
func (s *Store) SecretList(ctx context.Context) ([]vault.Record, error) {
	return s.listSecrets(ctx, s.d)
}

// SecretRekey implements [vault.Backend]. No record is written by anyone
// else between the read and the rewrite, so every record is rewritten.
func (s *Store) SecretRekey(ctx context.Context, reseal func(vault.Record) (vault.Record, error)) error {
	return s.d.inTx(ctx, func(tx tx) error {
		if err := s.d.lockSecrets(ctx, tx); err != nil {
			return err
		}
		recs, err := s.listSecrets(ctx, tx)
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
			if _, err := tx.exec(ctx, `UPDATE secrets SET placement = ?, hosts = ?, key_id = ?, sealed = ?, updated_at = ? WHERE name = ?`,
				next.Placement, s.d.hostsArg(next.Hosts), next.KeyID, next.Sealed, next.UpdatedAt.UnixNano(), next.Name); err != nil {
				return fmt.Errorf("sqlstore: rewriting secret: %w", err)
			}
		}
		return nil
	})
}

func (s *Store) listSecrets(ctx context.Context, q querier) ([]vault.Record, error) {
	rs, err := q.query(ctx, `SELECT `+secretColumns+` FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing secrets: %w", err)
	}
	defer rs.Close()
	return collect(rs, "listing secrets", s.scanSecret)
}

// scanSecret reads one row of secretColumns.
func (s *Store) scanSecret(row scanner) (vault.Record, error) {
	var rec vault.Record
	var updated int64
	if err := row.Scan(&rec.Name, &rec.Placement, s.d.hostsDest(&rec.Hosts), &rec.KeyID, &rec.Sealed, &updated); err != nil {
		return vault.Record{}, err
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
