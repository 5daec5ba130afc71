-- PostgreSQL twin of ../002_runs.sql: agent runs (agent.Store). The row is
-- the only definition of a run's state: every transition is one guarded
-- UPDATE. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE runs (
	id             text    PRIMARY KEY,
	owner          text    NOT NULL,
	request        bytea,            -- JSON agent.Request, as given
	status         text    NOT NULL CHECK (status IN (
		'queued', 'running', 'waiting_for_approval', 'waiting_for_input',
		'completed', 'failed', 'cancelled')),
	reason         text    NOT NULL, -- set once terminal
	error          text    NOT NULL,
	lease_owner    text    NOT NULL, -- '' when no segment holds the run
	lease_expires  bigint  NOT NULL, -- 0 when no segment holds the run
	pending_effect text    NOT NULL, -- the write fence; '' when no write is in flight
	suspended      bytea,            -- resumable state while waiting; NULL otherwise
	attempts       integer NOT NULL, -- times claimed
	created_at     bigint  NOT NULL,
	started_at     bigint  NOT NULL, -- first claim
	finished_at    bigint  NOT NULL  -- terminal transition
);

-- RunClaim (oldest queued) and RunList by status.
CREATE INDEX runs_status_created ON runs (status, created_at, id);
-- RunsStale and the stale transitions (running, lease expired).
CREATE INDEX runs_status_lease ON runs (status, lease_expires);
-- RunList by owner, and unfiltered, newest first.
CREATE INDEX runs_owner_created ON runs (owner, created_at, id);
CREATE INDEX runs_created ON runs (created_at, id);

-- What happened in a run, in order. seq is 1, 2, … per run. text is bytea:
-- it is model or tool output, cut at a byte count by the runtime, so it may
-- hold a NUL or a split UTF-8 sequence, which PostgreSQL's text refuses;
-- SQLite stores such a string whole, and so must this.
CREATE TABLE steps (
	run_id      text    NOT NULL REFERENCES runs (id),
	seq         integer NOT NULL,
	at          bigint  NOT NULL,
	kind        text    NOT NULL,
	round       integer NOT NULL,
	tool        text    NOT NULL,
	args        bytea,            -- JSON arguments of a tool call, as given
	outcome     text    NOT NULL,
	text        bytea   NOT NULL, -- stored whole; the runtime truncates
	duration_ns bigint  NOT NULL,
	PRIMARY KEY (run_id, seq)
);

-- The last seq given out per run. StepAppend bumps it and inserts the step
-- in one statement: the bump locks this row, so concurrent appends to one
-- run are numbered one after the other, without gaps, and never wait for
-- (or hold up) a transition of the run row.
CREATE TABLE step_seqs (
	run_id   text    PRIMARY KEY REFERENCES runs (id),
	last_seq integer NOT NULL
);
