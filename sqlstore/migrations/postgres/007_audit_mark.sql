-- PostgreSQL twin of ../007_audit_mark.sql. The head records where its
-- chain begins and how many rows it holds, and a copy of it, the mark, is
-- kept in a table of its own, written in the same transaction as the head
-- (audit.Heads). Deleting the rows and the head leaves the mark: the sealed
-- evidence that this key sealed a chain of that many rows. Heads written
-- before this migration read as first_seq 0, length 0, under their old seal.
ALTER TABLE audit_head
	ADD COLUMN first_seq bigint NOT NULL DEFAULT 0,
	ADD COLUMN length    bigint NOT NULL DEFAULT 0;

CREATE TABLE audit_mark (
	id        integer PRIMARY KEY CHECK (id = 1),
	seq       bigint  NOT NULL,
	first_seq bigint  NOT NULL,
	length    bigint  NOT NULL,
	mac       bytea   NOT NULL,
	seal      bytea   NOT NULL
);

-- The head and the mark never go back, against accidents. Someone with
-- write access can drop these; the seals and the mark are what catch that
-- (audit.Log.Verify).
CREATE FUNCTION audit_end_never_goes_back() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF NEW.seq >= OLD.seq THEN
			RETURN NEW;
		END IF;
	END IF;
	RAISE EXCEPTION '% never goes back', TG_TABLE_NAME;
END
$$;

CREATE TRIGGER audit_head_never_goes_back BEFORE UPDATE OR DELETE ON audit_head
	FOR EACH ROW EXECUTE FUNCTION audit_end_never_goes_back();

CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON audit_head
	FOR EACH STATEMENT EXECUTE FUNCTION audit_end_never_goes_back();

CREATE TRIGGER audit_mark_never_goes_back BEFORE UPDATE OR DELETE ON audit_mark
	FOR EACH ROW EXECUTE FUNCTION audit_end_never_goes_back();

CREATE TRIGGER audit_mark_no_truncate BEFORE TRUNCATE ON audit_mark
	FOR EACH STATEMENT EXECUTE FUNCTION audit_end_never_goes_back();
