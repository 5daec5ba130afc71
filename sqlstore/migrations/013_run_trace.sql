-- The W3C traceparent of the span that submitted a run (agent.Run.Trace),
-- so that every segment of it, a resumed one on another worker included,
-- continues the same trace; and that of the span that cancelled it
-- (agent.Run.CancelTrace), so that the worker that carries the cancel out
-- links its spans to the cancel's. Empty: tracing was off.
ALTER TABLE runs ADD COLUMN trace TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cancel_trace TEXT NOT NULL DEFAULT '';
