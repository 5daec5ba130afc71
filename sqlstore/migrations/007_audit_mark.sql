-- The head records where its chain begins and how many rows it holds, and
-- a copy of it, the mark, is kept in a table of its own, written in the
-- same transaction as the head (audit.Heads). Deleting the rows and the
-- head leaves the mark: the sealed evidence that this key sealed a chain of
-- that many rows. Heads written before this migration read as first_seq 0,
-- length 0, under their old seal.
ALTER TABLE audit_head ADD COLUMN first_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_head ADD COLUMN length INTEGER NOT NULL DEFAULT 0;

CREATE TABLE audit_mark (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	seq       INTEGER NOT NULL,
	first_seq INTEGER NOT NULL,
	length    INTEGER NOT NULL,
	mac       BLOB    NOT NULL,
	seal      BLOB    NOT NULL
) STRICT;

-- The head and the mark never go back, against accidents. Someone with
-- write access can drop these; the seals and the mark are what catch that
-- (audit.Log.Verify).
CREATE TRIGGER audit_head_no_delete BEFORE DELETE ON audit_head
BEGIN
	SELECT RAISE(ABORT, 'audit_head never goes back');
END;

CREATE TRIGGER audit_head_no_rollback BEFORE UPDATE ON audit_head WHEN NEW.seq < OLD.seq
BEGIN
	SELECT RAISE(ABORT, 'audit_head never goes back');
END;

CREATE TRIGGER audit_mark_no_delete BEFORE DELETE ON audit_mark
BEGIN
	SELECT RAISE(ABORT, 'audit_mark never goes back');
END;

CREATE TRIGGER audit_mark_no_rollback BEFORE UPDATE ON audit_mark WHEN NEW.seq < OLD.seq
BEGIN
	SELECT RAISE(ABORT, 'audit_mark never goes back');
END;
