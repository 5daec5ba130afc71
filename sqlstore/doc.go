// Package sqlstore is andon's database: one implementation of every store
// interface the domain packages declare — vault.Backend (secrets),
// audit.Store (the audit chain), [agent.Store] (runs, their guarded
// transitions, steps and operators' decisions on tool calls), catalogue.SettingsStore (operators' settings of
// imported tools) and [token.Store] (API tokens, kept as hashes) — in
// one [Store], on SQLite (one file, modernc.org/sqlite, pure Go, WAL and a
// busy timeout) or on PostgreSQL (pgx/v5), with the same behaviour on both.
// [Open] picks the backend from the DSN.
//
// The store's logic is written once, above an unexported dialect seam
// (dialect.go), as River keeps its logic above riverdriver: each dialect
// runs statements and supplies the few things that differ — how id lists
// travel, the claim's lock clause, how hosts are encoded, how a step's
// number is picked under which lock, how an audit append locks the heads,
// the migrations and River's driver. What only PostgreSQL can do, carry a
// cancel to other processes at once (LISTEN/NOTIFY), is a [Notifier] that
// [Store.Notifier] offers when the database has one.
//
// It also holds andon's job engine, River (riverqueue/river, with its
// riversqlite and riverpgxv5 drivers): a queued run is a River job inserted
// in the same transaction as the row that queues it, [Store.Queue] works
// those jobs as an agent.Queue, and [Store.CancelRunJob] tells the worker
// holding a cancelled run's job. See river.go.
//
// Opening a store applies the embedded migrations that have not run yet
// (migrations/*.sql, migrations/postgres/*.sql: the DDL is per dialect)
// and River's own. All of andon's SQL lives in this package; the domain
// packages declare the small interfaces they need and never import a
// driver. Package sqlstore/storetest holds the conformance suites the
// store passes on both backends.
package sqlstore
