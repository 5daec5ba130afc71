-- Questions servers ask operators during runs (agent.InputRequest, MCP
-- elicitation). While a question is pending its run is waiting_for_input
-- and the segment that holds the run (lease_owner) holds the tool call
-- open; an operator's reply is written here, and that segment, in whichever
-- process, reads it and clears content. Times are Unix nanoseconds, 0 when
-- unset.
CREATE TABLE input_requests (
	id          TEXT    PRIMARY KEY,
	run_id      TEXT    NOT NULL REFERENCES runs (id),
	server      TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	mode        TEXT    NOT NULL CHECK (mode IN ('form', 'url')),
	message     TEXT    NOT NULL, -- the server's question: untrusted text
	schema      BLOB,             -- the requested schema (JSON), form questions
	url         TEXT    NOT NULL, -- url questions: shown, never opened
	status      TEXT    NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled', 'expired')),
	content     BLOB,             -- the answer (JSON) until the holding segment takes it; NULL after
	answered_by TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	answered_at INTEGER NOT NULL
) STRICT;

-- InputPending and InputList: a run's questions, oldest first.
CREATE INDEX input_requests_run ON input_requests (run_id, created_at);
