package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/postgres/*.sql
var pgMigrations embed.FS

// pgMigrationLock is the first key of the advisory lock that migrations
// hold; the second is a hash of the schema they migrate, so that
// deployments in different schemas of one database do not wait for each
// other.
const pgMigrationLock = 0x616e646f // "ando"

// migrate applies, in one transaction, every embedded migration not yet
// recorded in schema_migrations. The transaction first takes an advisory
// lock on the schema, so that workers starting at once wait for the first
// one's migration and then find nothing to do; the lock ends with the
// transaction.
func (s *PGStore) migrate(ctx context.Context) error {
	if err := s.migrateOwn(ctx); err != nil {
		return err
	}
	return s.migrateRiver(ctx)
}

// migrateRiver brings River's tables up to date. River's migrations cannot
// share one transaction (one adds an enum value that the next uses), so
// they run as River runs them, one transaction each, while this process
// holds a session advisory lock on the schema that other processes' River
// migrations wait for.
func (s *PGStore) migrateRiver(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, pgRiverMigrationLock); err != nil {
		return fmt.Errorf("taking the River migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, pgRiverMigrationLock)
	return s.jobs.migrate(ctx)
}

// pgRiverMigrationLock is the first key of the advisory lock River's
// migrations run under.
const pgRiverMigrationLock = pgMigrationLock + 1

// migrateOwn applies andon's own migrations.
func (s *PGStore) migrateOwn(ctx context.Context) error {
	names, err := fs.Glob(pgMigrations, "migrations/postgres/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("reading the current schema: %w", err)
		}
		if schema == nil {
			return fmt.Errorf("no schema of the search_path exists")
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, pgMigrationLock, *schema); err != nil {
			return fmt.Errorf("taking the migration lock on schema %q: %w", *schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text    NOT NULL,
			applied_at bigint  NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		for _, name := range names {
			base := strings.TrimPrefix(name, "migrations/postgres/")
			num, _, _ := strings.Cut(base, "_")
			version, err := strconv.Atoi(num)
			if err != nil {
				return fmt.Errorf("migration %s: name must start with a number", base)
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
				return fmt.Errorf("migration %s: reading schema_migrations: %w", base, err)
			}
			if done {
				continue
			}
			body, err := pgMigrations.ReadFile(name)
			if err != nil {
				return err
			}
			// No arguments: pgx sends it with the simple protocol, which
			// runs a file of several statements.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", base, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				version, base, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("migration %s: recording it: %w", base, err)
			}
		}
		return nil
	})
}
