-- Agent runs (agent.Store). The row is the only definition of a run's state:
-- every transition is one guarded UPDATE. Times are Unix nanoseconds, 0 when
-- unset.
CREATE TABLE runs (
	id             TEXT    PRIMARY KEY,
	owner          TEXT    NOT NULL,
	request        BLOB,             -- JSON agent.Request
	status         TEXT    NOT NULL CHECK (status IN (
		'queued', 'running', 'waiting_for_approval', 'waiting_for_input',
		'completed', 'failed', 'cancelled')),
	reason         TEXT    NOT NULL, -- set once terminal
	error          TEXT    NOT NULL,
	lease_owner    TEXT    NOT NULL, -- '' when no segment holds the run
	lease_expires  INTEGER NOT NULL, -- 0 when no segment holds the run
	pending_effect TEXT    NOT NULL, -- the write fence; '' when no write is in flight
	suspended      BLOB,             -- resumable state while waiting; NULL otherwise
	attempts       INTEGER NOT NULL, -- times claimed
	created_at     INTEGER NOT NULL,
	started_at     INTEGER NOT NULL, -- first claim
	finished_at    INTEGER NOT NULL  -- terminal transition
) STRICT;

-- RunClaim (oldest queued) and RunList by status.
CREATE INDEX runs_status_created ON runs (status, created_at, id);
-- RunsStale and the stale transitions (running, lease expired).
CREATE INDEX runs_status_lease ON runs (status, lease_expires);
-- RunList by owner, and unfiltered, newest first.
CREATE INDEX runs_owner_created ON runs (owner, created_at, id);
CREATE INDEX runs_created ON runs (created_at, id);

-- What happened in a run, in order. seq is 1, 2, … per run.
CREATE TABLE steps (
	run_id      TEXT    NOT NULL REFERENCES runs (id),
	seq         INTEGER NOT NULL,
	at          INTEGER NOT NULL,
	kind        TEXT    NOT NULL,
	round       INTEGER NOT NULL,
	tool        TEXT    NOT NULL,
	args        BLOB,             -- JSON arguments of a tool call
	outcome     TEXT    NOT NULL,
	text        TEXT    NOT NULL, -- stored whole; the runtime truncates
	duration_ns INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT;
