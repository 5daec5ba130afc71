-- The runtime that alone executes a run (agent.Run.Home): a run started by
-- agent.Runtime.Call for a caller that waits for it in that process (the
-- gateway's downstream request). Such a run never has a River job and is
-- never claimed from the queue by another worker; once an operator's
-- decision hands it back, it waits queued, with a pickup deadline in
-- lease_expires, for its home to take it again. Empty: any worker.
ALTER TABLE runs ADD COLUMN home TEXT NOT NULL DEFAULT '';
