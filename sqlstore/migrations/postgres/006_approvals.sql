-- PostgreSQL twin of ../006_approvals.sql: operators' decisions on tool
-- calls (agent.Approval). A decision names exactly the call it covers: the
-- run, the model step that asked for it (its seq), the call's place among
-- that step's calls (from 1), the tool and the digest of its arguments
-- (agent.ArgsDigest). The provider's call id is kept for the record only:
-- providers reuse ids. One decision per call. Times are Unix nanoseconds.
CREATE TABLE approvals (
	run_id      text    NOT NULL REFERENCES runs (id),
	step_seq    integer NOT NULL,
	call_index  integer NOT NULL,
	tool        text    NOT NULL,
	args_digest text    NOT NULL,
	call_id     text    NOT NULL,
	approved    boolean NOT NULL,
	decided_by  text    NOT NULL,
	override    boolean NOT NULL, -- an admin's override of four eyes
	decided_at  bigint  NOT NULL,
	PRIMARY KEY (run_id, step_seq, call_index)
);
