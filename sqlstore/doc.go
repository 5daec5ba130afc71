// Package sqlstore is andon's SQLite store: it implements vault.Backend and
// audit.Store over one database file, using modernc.org/sqlite (pure Go, no
// cgo).
// It also implements [agent.Store]: runs, their guarded transitions and steps;
// catalogue.SettingsStore: operators' settings of imported tools; and
// [api.TokenStore]: the API's tokens, kept as hashes.
// [OpenPostgres] opens the same store on PostgreSQL ([PGStore], pgx/v5, migrations/postgres/*.sql).
//
// [Open] creates the file if needed, turns on WAL mode and a busy timeout,
// and applies the embedded migrations (migrations/*.sql) that have not run
// yet. All of andon's SQL lives in this package; the domain packages declare
// the small interfaces they need and never import a driver.
//
// The interfaces are dialect-neutral so that a PostgreSQL store can implement
// them too; package sqlstore/storetest holds the conformance suite every
// implementation must pass.
package sqlstore
