-- Secrets sealed by package vault. Only metadata is in the clear.
CREATE TABLE secrets (
	name       TEXT    PRIMARY KEY,
	placement  TEXT    NOT NULL,
	hosts      TEXT    NOT NULL, -- JSON array of strings
	key_id     TEXT    NOT NULL,
	sealed     BLOB    NOT NULL,
	updated_at INTEGER NOT NULL  -- Unix nanoseconds
) STRICT;

-- The hash-chained audit log of package audit.
CREATE TABLE audit_log (
	seq         INTEGER PRIMARY KEY,
	time_ns     INTEGER NOT NULL,
	action      TEXT    NOT NULL,
	purpose     TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	method      TEXT    NOT NULL,
	host        TEXT    NOT NULL,
	path        TEXT    NOT NULL,
	status      INTEGER NOT NULL,
	ok          INTEGER NOT NULL,
	reason      TEXT    NOT NULL,
	duration_ns INTEGER NOT NULL,
	mac         BLOB    NOT NULL
) STRICT;

CREATE INDEX audit_log_run_id ON audit_log (run_id, seq);
CREATE INDEX audit_log_action ON audit_log (action, seq);

-- The chain's end, updated in the same transaction as each append.
CREATE TABLE audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  INTEGER NOT NULL,
	mac  BLOB    NOT NULL,
	seal BLOB    NOT NULL
) STRICT;

-- Append-only against accidents. Someone with write access can drop these;
-- the MAC chain is what catches that (audit.Log.Verify).
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;
