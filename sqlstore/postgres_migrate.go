package sqlstore

import (
	"context"
	"embed"
	"fmt"
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
func (d *postgres) migrate(ctx context.Context) error {
	if err := d.migrateOwn(ctx); err != nil {
		return err
	}
	return d.migrateRiver(ctx)
}

// migrateRiver brings River's tables up to date. River's migrations cannot
// share one transaction (one adds an enum value that the next uses), so
// they run as River runs them, one transaction each, while this process
// holds a session advisory lock on the schema that other processes' River
// migrations wait for.
func (d *postgres) migrateRiver(ctx context.Context) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, pgRiverMigrationLock); err != nil {
		return fmt.Errorf("taking the River migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, pgRiverMigrationLock)
	return d.jobs.migrate(ctx)
}

// pgRiverMigrationLock is the first key of the advisory lock River's
// migrations run under.
const pgRiverMigrationLock = pgMigrationLock + 1

// migrateOwn applies andon's own migrations in one transaction, which
// first takes an advisory lock on the schema.
func (d *postgres) migrateOwn(ctx context.Context) error {
	return d.inTx(ctx, func(tx tx) error {
		var schema *string
		if err := tx.queryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("reading the current schema: %w", err)
		}
		if schema == nil {
			return fmt.Errorf("no schema of the search_path exists")
		}
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(?))`, pgMigrationLock, *schema); err != nil {
			return fmt.Errorf("taking the migration lock on schema %q: %w", *schema, err)
		}
		if _, err := tx.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text    NOT NULL,
			applied_at bigint  NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		return applyMigrations(ctx, tx, pgMigrations, "migrations/postgres")
	})
}
