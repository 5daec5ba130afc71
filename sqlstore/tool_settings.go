package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

var _ catalogue.SettingsStore = (*Store)(nil)

const toolSettingColumns = `server, tool, enabled, effect, requires_approval, updated_by, updated_at`

// ToolSettingList implements [catalogue.SettingsStore].
func (s *Store) ToolSettingList(ctx context.Context) ([]catalogue.ToolSetting, error) {
	rs, err := s.d.query(ctx, `SELECT `+toolSettingColumns+` FROM tool_settings ORDER BY server, tool`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing tool settings: %w", err)
	}
	defer rs.Close()
	return collect(rs, "listing tool settings", scanToolSetting)
}

// ToolSettingUpdate implements [catalogue.SettingsStore]. It merges a
// change into the tool's row in one statement: a NULL in the change (a nil
// pointer, an empty effect) keeps the stored value.
func (s *Store) ToolSettingUpdate(ctx context.Context, ch catalogue.ToolSetting) (catalogue.ToolSetting, error) {
	st, err := scanToolSetting(s.d.queryRow(ctx, `INSERT INTO tool_settings (`+toolSettingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (server, tool) DO UPDATE SET
			enabled           = COALESCE(excluded.enabled, tool_settings.enabled),
			effect            = COALESCE(excluded.effect, tool_settings.effect),
			requires_approval = COALESCE(excluded.requires_approval, tool_settings.requires_approval),
			updated_by        = excluded.updated_by,
			updated_at        = excluded.updated_at
		RETURNING `+toolSettingColumns,
		ch.Server, ch.Tool, ch.Enabled, nullEffect(ch.Effect), ch.RequiresApproval, ch.UpdatedBy, updatedAt(ch)))
	if err != nil {
		return catalogue.ToolSetting{}, fmt.Errorf("sqlstore: updating the setting of tool %q of server %q: %w", ch.Tool, ch.Server, err)
	}
	return st, nil
}

// nullEffect is NULL for an effect not set.
func nullEffect(e agent.Effect) any {
	if e == "" {
		return nil
	}
	return string(e)
}

// updatedAt is when a change was made: now if it does not say.
func updatedAt(ch catalogue.ToolSetting) int64 {
	if ch.UpdatedAt.IsZero() {
		return time.Now().UnixNano()
	}
	return ch.UpdatedAt.UnixNano()
}

// scanToolSetting reads one row of toolSettingColumns.
func scanToolSetting(row scanner) (catalogue.ToolSetting, error) {
	var st catalogue.ToolSetting
	var enabled, approval sql.NullBool
	var effect sql.NullString
	var at int64
	if err := row.Scan(&st.Server, &st.Tool, &enabled, &effect, &approval, &st.UpdatedBy, &at); err != nil {
		return catalogue.ToolSetting{}, err
	}
	if enabled.Valid {
		st.Enabled = &enabled.Bool
	}
	if approval.Valid {
		st.RequiresApproval = &approval.Bool
	}
	st.Effect = agent.Effect(effect.String)
	st.UpdatedAt = time.Unix(0, at).UTC()
	return st, nil
}
