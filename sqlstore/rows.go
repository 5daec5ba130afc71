package sqlstore

import (
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// rows is what a query returns on either backend. The caller closes them.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// scanner is a row to read: one of rows, or the row of a queryRow.
type scanner interface{ Scan(dest ...any) error }

// collect reads every row with scan. what says what is being read, for the
// error.
func collect[T any](rs rows, what string, scan func(scanner) (T, error)) ([]T, error) {
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return out, nil
}

// scanID reads a row of one text column.
func scanID(sc scanner) (string, error) {
	var id string
	err := sc.Scan(&id)
	return id, err
}

// runStatus is one row of SELECT id, status FROM runs.
type runStatus struct {
	id     string
	status agent.Status
}

func scanRunStatus(sc scanner) (runStatus, error) {
	var id, status string
	err := sc.Scan(&id, &status)
	return runStatus{id, agent.Status(status)}, err
}

// statusMap reads SELECT id, status rows into a map.
func statusMap(rs rows) (map[string]agent.Status, error) {
	list, err := collect(rs, "reading run statuses", scanRunStatus)
	if err != nil {
		return nil, err
	}
	out := make(map[string]agent.Status, len(list))
	for _, r := range list {
		out[r.id] = r.status
	}
	return out, nil
}

// scanStep reads one row of stepColumns. The text is scanned as bytes: it
// is TEXT on SQLite and bytea on PostgreSQL (which refuses a split UTF-8
// character or a NUL in text).
func scanStep(sc scanner) (*agent.Step, error) {
	var (
		st            agent.Step
		args, text    []byte
		kind, outcome string
		at, dur       int64
	)
	if err := sc.Scan(&st.RunID, &st.Seq, &at, &kind, &st.Round, &st.Tool, &args, &outcome, &text, &dur); err != nil {
		return nil, err
	}
	st.At = fromNanos(at)
	st.Kind = agent.StepKind(kind)
	st.Args = args
	st.Outcome = agent.Outcome(outcome)
	st.Text = string(text)
	st.Duration = time.Duration(dur)
	return &st, nil
}

// scanAuditRow reads one row of the audit log's columns, in the order both
// backends select them.
func scanAuditRow(sc scanner) (audit.Row, error) {
	var r audit.Row
	var action string
	var timeNS, durNS int64
	if err := sc.Scan(&r.Seq, &timeNS, &action, &r.Purpose, &r.RunID, &r.Method, &r.Host, &r.Path,
		&r.Status, &r.OK, &r.Reason, &durNS, &r.MAC); err != nil {
		return audit.Row{}, err
	}
	r.Action = audit.Action(action)
	r.Time = time.Unix(0, timeNS).UTC()
	r.Duration = time.Duration(durNS)
	return r, nil
}

// scanToken reads one row of tokenColumns.
func scanToken(sc scanner) (*token.Token, error) {
	var (
		t                          token.Token
		role                       string
		created, lastUsed, revoked int64
	)
	if err := sc.Scan(&t.ID, &t.Name, &role, &t.Hash, &created, &lastUsed, &revoked); err != nil {
		return nil, err
	}
	t.Role = token.Role(role)
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromNanos(created), fromNanos(lastUsed), fromNanos(revoked)
	return &t, nil
}
