package sqlstore

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// ActiveRunsDiffer says how active_runs differs from the runs it stands
// for (the unfinished ones, with their status and creation time), or ""
// if it does not.
func (s *Store) ActiveRunsDiffer(t interface{ Fatal(...any) }) string {
	ctx := context.Background()
	read := func(stmt string) map[string]string {
		rs, err := s.d.query(ctx, stmt)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		rows, err := collect(rs, "reading unfinished runs", func(sc scanner) (row [2]string, err error) {
			var created int64
			err = sc.Scan(&row[0], &row[1], &created)
			row[1] += "@" + strconv.FormatInt(created, 10)
			return row, err
		})
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]string, len(rows))
		for _, r := range rows {
			out[r[0]] = r[1]
		}
		return out
	}
	want := read(`SELECT id, status, created_at FROM runs WHERE status NOT IN ` + terminal)
	got := read(`SELECT id, status, created_at FROM active_runs`)
	var diff []string
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			diff = append(diff, fmt.Sprintf("run %s is %s, active_runs has %q", id, w, g))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			diff = append(diff, fmt.Sprintf("active_runs has %s as %s, the run is finished or gone", id, g))
		}
	}
	slices.Sort(diff)
	return strings.Join(diff, "; ")
}

// IndexedRunColumns lists the columns of runs that an index of runs names
// (as a key, in an expression or in its predicate), but for the primary
// key's.
func (s *Store) IndexedRunColumns(t interface{ Fatal(...any) }) []string {
	ctx := context.Background()
	stmt := `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql IS NOT NULL`
	if _, pg := s.d.(*postgres); pg {
		stmt = `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'runs'
			AND indexname <> 'runs_pkey'`
	}
	rs, err := s.d.query(ctx, stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	defs, err := collect(rs, "listing the indexes of runs", scanID)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range strings.Fields(strings.ReplaceAll(runColumns+", job_id", ",", " ")) {
		named := regexp.MustCompile(`\b` + col + `\b`)
		if slices.ContainsFunc(defs, named.MatchString) {
			cols = append(cols, col)
		}
	}
	return cols
}
