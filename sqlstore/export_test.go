package sqlstore

import (
	"context"
	"time"
)

// ListenHealthInterval sets how long a listener waits in silence before it
// pings its connection.
func ListenHealthInterval(d time.Duration) ListenOption {
	return func(c *listenConfig) { c.health = d }
}

// RunJob reports the River job that carries run id: its id and state, and
// the run id its arguments name; ok is false if the run has no job.
func (s *Store) RunJob(t interface{ Fatal(...any) }, id string) (jobID int64, state, argRun string, ok bool) {
	stmt := `SELECT j.id, j.state, json_extract(j.args, '$.run_id') FROM runs r JOIN river_job j ON j.id = r.job_id WHERE r.id = ?`
	if _, pg := s.d.(*postgres); pg {
		stmt = `SELECT j.id, j.state::text, j.args->>'run_id' FROM runs r JOIN river_job j ON j.id = r.job_id WHERE r.id = ?`
	}
	if err := s.d.queryRow(context.Background(), stmt, id).Scan(&jobID, &state, &argRun); err != nil {
		return 0, "", "", false
	}
	return jobID, state, argRun, true
}

// RunJobs counts the run jobs River holds.
func (s *Store) RunJobs(t interface{ Fatal(...any) }) int {
	var n int
	if err := s.d.queryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'andon_run'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// OrphanRun makes run id look queued before River carried runs: no job.
func (s *Store) OrphanRun(t interface{ Fatal(...any) }, id string) {
	ctx := context.Background()
	if _, err := s.d.exec(ctx, `DELETE FROM river_job WHERE id = (SELECT job_id FROM runs WHERE id = ?)`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.exec(ctx, `UPDATE runs SET job_id = NULL WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
}

// FinishRunJob marks the River job of run id completed, as River does when
// the job's work has returned.
func (s *Store) FinishRunJob(t interface{ Fatal(...any) }, id string) {
	if _, err := s.d.exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP
		WHERE id = (SELECT job_id FROM runs WHERE id = ?)`, id); err != nil {
		t.Fatal(err)
	}
}
