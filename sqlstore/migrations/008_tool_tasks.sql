-- Tool calls that became MCP tasks (agent.Task): durable handles on remote
-- work. One row per call, named like a decision is: the run, the model
-- step that asked for the call (its seq) and the call's place among that
-- step's calls (from 1). The row is written, guarded by the run's lease,
-- before the call counts as in flight, so that any process can send
-- tasks/cancel for it and a worker that takes over the run asks the server
-- what became of it. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE tool_tasks (
	run_id         TEXT    NOT NULL REFERENCES runs (id),
	step_seq       INTEGER NOT NULL,
	call_index     INTEGER NOT NULL,
	tool           TEXT    NOT NULL, -- the local name the model called
	args_digest    TEXT    NOT NULL,
	server         TEXT    NOT NULL, -- the catalogue's name of the MCP server
	task_id        TEXT    NOT NULL, -- the server's id of the task
	revision       TEXT    NOT NULL, -- protocol revision of the session that created it
	status         TEXT    NOT NULL CHECK (status IN (
		'working', 'input_required', 'completed', 'failed', 'cancelled', 'unknown')),
	status_message TEXT    NOT NULL, -- what the server said last, cut short
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL,
	cancel_at      INTEGER NOT NULL, -- when tasks/cancel was last sent; 0: never
	cancel_outcome TEXT    NOT NULL CHECK (cancel_outcome IN ('', 'acknowledged', 'rejected', 'unreachable')),
	settled        INTEGER NOT NULL CHECK (settled IN (0, 1)), -- the call's step is recorded
	PRIMARY KEY (run_id, step_seq, call_index)
) STRICT;

-- TasksToCancel and the takeover's check: the tasks not terminal yet.
CREATE INDEX tool_tasks_open ON tool_tasks (status, run_id);
