-- The runs not yet finished, by status: a partial index of runs kept by
-- hand. runs.status stays the one definition of a run's state; this table
-- only narrows the lookups that start from a status (the claim's oldest
-- queued run, the stale leases, RunList of an unfinished status), and every
-- query that reads it checks the run row too. Triggers keep it, so that no
-- transition can forget it.
--
-- Why not indexes on runs: on PostgreSQL, an UPDATE that changes an indexed
-- column writes a new entry into every index of the table; one that changes
-- none is a heap-only (HOT) update, with no index work. An operator's cancel
-- of a hundred runs (one statement, sqlstore/finish_batch.go) cost 4.4–6.5 ms
-- with status and lease_expires indexed and 2.0–2.8 ms without (pgbench, a
-- copy of runs with 100,000 rows), and the lease renewals and the write
-- fence's stamps, which change lease_expires, become HOT too. SQLite keeps
-- the same tables and the same SQL: it writes only the indexes whose
-- columns change, so it loses nothing here.
CREATE TABLE active_runs (
	id         TEXT    PRIMARY KEY,
	status     TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX active_runs_status_created ON active_runs (status, created_at, id);

INSERT INTO active_runs (id, status, created_at)
	SELECT id, status, created_at FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled');

CREATE TRIGGER active_runs_insert AFTER INSERT ON runs
	WHEN NEW.status NOT IN ('completed', 'failed', 'cancelled')
BEGIN
	INSERT INTO active_runs (id, status, created_at) VALUES (NEW.id, NEW.status, NEW.created_at);
END;

-- A run never leaves a terminal status (every transition's guard says so),
-- so a finish removes the run for good.
CREATE TRIGGER active_runs_finish AFTER UPDATE OF status ON runs
	WHEN NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
	DELETE FROM active_runs WHERE id = NEW.id;
END;

CREATE TRIGGER active_runs_status AFTER UPDATE OF status ON runs
	WHEN NEW.status NOT IN ('completed', 'failed', 'cancelled') AND NEW.status <> OLD.status
BEGIN
	UPDATE active_runs SET status = NEW.status WHERE id = NEW.id;
END;

CREATE TRIGGER active_runs_delete AFTER DELETE ON runs
BEGIN
	DELETE FROM active_runs WHERE id = OLD.id;
END;

-- The lookups by status now start from active_runs.
DROP INDEX runs_status_created;
DROP INDEX runs_status_lease;
