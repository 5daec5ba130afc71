-- Operators' decisions on tool calls (agent.Approval). A decision names
-- exactly the call it covers: the run, the model step that asked for it
-- (its seq), the call's place among that step's calls (from 1), the tool
-- and the digest of its arguments (agent.ArgsDigest). The provider's call
-- id is kept for the record only: providers reuse ids. One decision per
-- call. Times are Unix nanoseconds.
CREATE TABLE approvals (
	run_id      TEXT    NOT NULL REFERENCES runs (id),
	step_seq    INTEGER NOT NULL,
	call_index  INTEGER NOT NULL,
	tool        TEXT    NOT NULL,
	args_digest TEXT    NOT NULL,
	call_id     TEXT    NOT NULL,
	approved    INTEGER NOT NULL CHECK (approved IN (0, 1)),
	decided_by  TEXT    NOT NULL,
	override    INTEGER NOT NULL CHECK (override IN (0, 1)), -- an admin's override of four eyes
	decided_at  INTEGER NOT NULL,
	PRIMARY KEY (run_id, step_seq, call_index)
) STRICT;
