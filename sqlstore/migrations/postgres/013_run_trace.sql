-- PostgreSQL twin of ../013_run_trace.sql: the traceparents of the span
-- that submitted a run and of the one that cancelled it (agent.Run.Trace,
-- agent.Run.CancelTrace). Not indexed, so every run UPDATE stays
-- heap-only (010_active_runs.sql).
ALTER TABLE runs ADD COLUMN trace text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cancel_trace text NOT NULL DEFAULT '';
