package sqlstore

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/agent"
)

// Operators' decisions on tool calls: the approvals table (migration 006),
// one row per call, keyed by the run, the model step that asked for the
// call and its place in it.

const approvalColumns = `run_id, step_seq, call_index, tool, args_digest, call_id, approved, decided_by, override, decided_at, tool_identity`

// ApprovalRecord implements [agent.Store]. It stores a decision only on a
// running run the given owner holds (the lease guard, in the same
// statement) and only if the call has none yet — or has an approval for a
// tool that is no longer the one the call would reach (another identity),
// which the new decision replaces.
func (s *Store) ApprovalRecord(ctx context.Context, a *agent.Approval, owner string) (bool, error) {
	ok, err := changedOne(s.d.exec(ctx, `INSERT INTO approvals (`+approvalColumns+`)
		SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ? AND status = 'running' AND lease_owner = ? AND lease_owner <> ''
		ON CONFLICT (run_id, step_seq, call_index) DO UPDATE SET
			tool = excluded.tool, args_digest = excluded.args_digest, call_id = excluded.call_id,
			approved = excluded.approved, decided_by = excluded.decided_by, override = excluded.override,
			decided_at = excluded.decided_at, tool_identity = excluded.tool_identity
		WHERE approvals.approved AND approvals.tool_identity <> excluded.tool_identity`,
		a.Step, a.Call, a.Tool, a.ArgsDigest, a.CallID, a.Approved, a.By, a.Override, nanos(a.At), a.Identity, a.RunID, owner))
	if err != nil {
		return false, fmt.Errorf("sqlstore: recording a decision on run %s: %w", a.RunID, err)
	}
	return ok, nil
}

// ApprovalList implements [agent.Store].
func (s *Store) ApprovalList(ctx context.Context, runID string) ([]*agent.Approval, error) {
	rs, err := s.d.query(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE run_id = ? ORDER BY step_seq, call_index`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the decisions of run %s: %w", runID, err)
	}
	defer rs.Close()
	return collect(rs, "listing the decisions of run "+runID, scanApproval)
}

func scanApproval(sc scanner) (*agent.Approval, error) {
	var a agent.Approval
	var at int64
	if err := sc.Scan(&a.RunID, &a.Step, &a.Call, &a.Tool, &a.ArgsDigest, &a.CallID, &a.Approved, &a.By, &a.Override, &at, &a.Identity); err != nil {
		return nil, err
	}
	a.At = fromNanos(at)
	return &a, nil
}
