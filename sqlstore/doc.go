// Package sqlstore is andon's database: one implementation of every store
// interface the domain packages declare — vault.Backend (secrets),
// audit.Store (the audit chain), [agent.Store] (runs, their guarded
// transitions, steps and operators' decisions on tool calls), catalogue.SettingsStore (operators' settings of
// imported tools) and [token.Store] (API tokens, kept as hashes) — on
// SQLite ([Open]: one file, modernc.org/sqlite, pure Go, WAL and a busy
// timeout) or on PostgreSQL ([OpenPostgres]: [PGStore], pgx/v5), with the
// same behaviour on both.
//
// It also holds andon's job engine, River (riverqueue/river, with its
// riversqlite and riverpgxv5 drivers): a queued run is a River job inserted
// in the same transaction as the row that queues it, [Store.Queue] works
// those jobs as an agent.Queue, and [Store.CancelRunJob] tells the worker
// holding a cancelled run's job. See river.go.
//
// Opening a store applies the embedded migrations that have not run yet
// (migrations/*.sql, migrations/postgres/*.sql) and River's own. All of
// andon's SQL lives in this package; the domain packages declare the small
// interfaces they need and never import a driver. Package
// sqlstore/storetest holds the conformance suites every implementation
// must pass.
package sqlstore
