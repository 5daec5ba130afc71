-- PostgreSQL twin of ../001_secrets_and_audit.sql. Times are Unix
-- nanoseconds (bigint), as on SQLite: every time reads back exactly as it
-- was written.

-- Secrets sealed by package vault. Only metadata is in the clear.
CREATE TABLE secrets (
	name       text   PRIMARY KEY,
	placement  text   NOT NULL,
	hosts      text[] NOT NULL,
	key_id     text   NOT NULL,
	sealed     bytea  NOT NULL,
	updated_at bigint NOT NULL
);

-- The hash-chained audit log of package audit.
CREATE TABLE audit_log (
	seq         bigint  PRIMARY KEY,
	time_ns     bigint  NOT NULL,
	action      text    NOT NULL,
	purpose     text    NOT NULL,
	run_id      text    NOT NULL,
	method      text    NOT NULL,
	host        text    NOT NULL,
	path        text    NOT NULL,
	status      integer NOT NULL,
	ok          boolean NOT NULL,
	reason      text    NOT NULL,
	duration_ns bigint  NOT NULL,
	mac         bytea   NOT NULL
);

CREATE INDEX audit_log_run_id ON audit_log (run_id, seq);
CREATE INDEX audit_log_action ON audit_log (action, seq);

-- The chain's end, updated in the same transaction as each append. Its one
-- row exists from the start (seq 0, no MAC: the empty log), so that every
-- append has a row to lock (SELECT … FOR UPDATE), the first one included.
CREATE TABLE audit_head (
	id   integer PRIMARY KEY CHECK (id = 1),
	seq  bigint  NOT NULL,
	mac  bytea,  -- NULL while the log is empty
	seal bytea   -- NULL while the log is empty
);

INSERT INTO audit_head (id, seq) VALUES (1, 0);

-- Append-only against accidents. Someone with write access can drop these;
-- the MAC chain is what catches that (audit.Log.Verify).
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only';
END
$$;

CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
