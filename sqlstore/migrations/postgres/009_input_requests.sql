-- PostgreSQL twin of ../009_input_requests.sql: questions servers ask
-- operators during runs (agent.InputRequest, MCP elicitation). While a
-- question is pending its run is waiting_for_input and the segment that
-- holds the run (lease_owner) holds the tool call open; an operator's reply
-- is written here, and that segment, in whichever process, reads it and
-- clears content. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE input_requests (
	id          text    PRIMARY KEY,
	run_id      text    NOT NULL REFERENCES runs (id),
	server      text    NOT NULL,
	tool        text    NOT NULL,
	mode        text    NOT NULL CHECK (mode IN ('form', 'url')),
	message     text    NOT NULL, -- the server's question: untrusted text
	schema      bytea,            -- the requested schema (JSON), form questions
	url         text    NOT NULL, -- url questions: shown, never opened
	status      text    NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled', 'expired')),
	content     bytea,            -- the answer (JSON) until the holding segment takes it; NULL after
	answered_by text    NOT NULL,
	created_at  bigint  NOT NULL,
	expires_at  bigint  NOT NULL,
	answered_at bigint  NOT NULL
);

-- InputPending and InputList: a run's questions, oldest first.
CREATE INDEX input_requests_run ON input_requests (run_id, created_at);
