package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// applyMigrations applies, in tx, every migration of dir in files (NNN_name.sql,
// in order of name) not yet recorded in schema_migrations, and records it.
// Each dialect keeps its own files, as River keeps its DDL per driver: the
// schemas are the same tables in each one's types.
func applyMigrations(ctx context.Context, tx tx, files embed.FS, dir string) error {
	names, err := fs.Glob(files, dir+"/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		base := path.Base(name)
		num, _, _ := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a number", base)
		}
		var done int
		if err := tx.queryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&done); err != nil {
			return fmt.Errorf("migration %s: reading schema_migrations: %w", base, err)
		}
		if done > 0 {
			continue
		}
		body, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		// No arguments: the file runs as written, several statements at
		// once (on PostgreSQL, pgx's simple protocol).
		if _, err := tx.exec(ctx, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", base, err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			version, base, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("migration %s: recording it: %w", base, err)
		}
	}
	return nil
}
