package sqlstore

import (
	"context"
	"fmt"
)

// SchemaVersion returns the number of the newest migration applied to the
// database (Open applies every one it has).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion returns the number of the newest migration applied to the
// database (OpenPostgres applies every one it has).
func (s *PGStore) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	return v, nil
}
