-- PostgreSQL twin of ../008_tool_tasks.sql: tool calls that became MCP
-- tasks (agent.Task), durable handles on remote work. One row per call,
-- named like a decision is: the run, the model step that asked for the
-- call (its seq) and the call's place among that step's calls (from 1).
-- Written, guarded by the run's lease, before the call counts as in
-- flight. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE tool_tasks (
	run_id         text    NOT NULL REFERENCES runs (id),
	step_seq       integer NOT NULL,
	call_index     integer NOT NULL,
	tool           text    NOT NULL, -- the local name the model called
	args_digest    text    NOT NULL,
	server         text    NOT NULL, -- the catalogue's name of the MCP server
	task_id        text    NOT NULL, -- the server's id of the task
	revision       text    NOT NULL, -- protocol revision of the session that created it
	status         text    NOT NULL CHECK (status IN (
		'working', 'input_required', 'completed', 'failed', 'cancelled', 'unknown')),
	status_message text    NOT NULL, -- what the server said last, cut short
	created_at     bigint  NOT NULL,
	updated_at     bigint  NOT NULL,
	cancel_at      bigint  NOT NULL, -- when tasks/cancel was last sent; 0: never
	cancel_outcome text    NOT NULL CHECK (cancel_outcome IN ('', 'acknowledged', 'rejected', 'unreachable')),
	settled        boolean NOT NULL, -- the call's step is recorded
	PRIMARY KEY (run_id, step_seq, call_index)
);

-- TasksToCancel and the takeover's check: the tasks not terminal yet.
CREATE INDEX tool_tasks_open ON tool_tasks (status, run_id);
