-- The River job that carries a queued run (sqlstore/river.go), so that
-- cancelling the run cancels its job in the same transaction. NULL for a
-- run that never was queued as a job.
ALTER TABLE runs ADD COLUMN job_id INTEGER;
