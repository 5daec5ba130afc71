-- PostgreSQL twin of ../012_run_home.sql: the runtime that alone executes a
-- run (agent.Run.Home). Not indexed: no lookup starts from it, and an
-- unindexed column keeps every run UPDATE heap-only (010_active_runs.sql).
ALTER TABLE runs ADD COLUMN home text NOT NULL DEFAULT '';
