package catalogue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
)

// DefaultSettingsMaxAge is how old, at most, the operators' settings a
// [Catalogue] applies may be when [Options].SettingsMaxAge is zero: a change
// made by another process is applied within about this long.
const DefaultSettingsMaxAge = time.Second

// ToolSetting is an operator's setting of one tool, kept in a
// [SettingsStore] so that every process on the database applies it. It
// names the tool by its server and its name on that server, not by its
// local name. A nil pointer or an empty Effect is not set: andon.yaml (or
// the default) decides.
type ToolSetting struct {
	Server string // the server's name
	Tool   string // the tool's name on the server

	Enabled          *bool
	Effect           agent.Effect
	RequiresApproval *bool

	// UpdatedBy and UpdatedAt say who changed the setting last, and when.
	UpdatedBy string
	UpdatedAt time.Time
}

// SettingsStore keeps operators' tool settings. Package sqlstore implements
// it on SQLite and PostgreSQL; sqlstore/storetest holds its conformance
// suite.
type SettingsStore interface {
	// ToolSettingList returns every setting, ordered by server, then tool.
	ToolSettingList(ctx context.Context) ([]ToolSetting, error)
	// ToolSettingUpdate merges change into the setting of (change.Server,
	// change.Tool), creating it if there is none, in one atomic step: the
	// fields change sets replace the stored ones, the others are kept, and
	// UpdatedBy and UpdatedAt are replaced. It returns the setting as
	// stored. An Effect that is not an agent.Effect is an error and changes
	// nothing.
	ToolSettingUpdate(ctx context.Context, change ToolSetting) (ToolSetting, error)
}

// EffectSource says what decided a tool's effect.
type EffectSource string

// Where a tool's effect comes from, strongest first.
const (
	// SourceOperator: an operator's setting ([SettingsStore]), which wins
	// over everything else.
	SourceOperator EffectSource = "operator"
	// SourceConfig: the server's effects in andon.yaml ([Server].Effects).
	SourceConfig EffectSource = "config"
	// SourceAnnotation: the annotations of a server marked
	// TrustAnnotations.
	SourceAnnotation EffectSource = "annotation"
	// SourceDefault: nobody classified the tool, so it is a non-idempotent
	// write.
	SourceDefault EffectSource = "default"
)

// ToolChange is what an operator changes of a tool: each field set
// replaces the tool's current setting; a nil pointer or an empty Effect
// keeps it.
type ToolChange struct {
	Enabled          *bool
	Effect           agent.Effect
	RequiresApproval *bool
}

// IsEmpty reports whether ch changes nothing.
func (ch ToolChange) IsEmpty() bool {
	return ch.Enabled == nil && ch.Effect == "" && ch.RequiresApproval == nil
}

// ValidEffect reports whether e is one of the three effects.
func ValidEffect(e agent.Effect) bool {
	switch e {
	case agent.EffectReadOnly, agent.EffectIdempotentWrite, agent.EffectNonIdempotentWrite:
		return true
	}
	return false
}

// toolKey names a tool for its settings.
type toolKey struct{ server, tool string }

// settings caches the operators' settings: re-read when older than maxAge,
// so that a change made by another process applies within a bounded time;
// a change made through this catalogue applies at once.
type settings struct {
	store  SettingsStore // nil: no operator settings
	maxAge time.Duration // negative: read on every use
	logger *slog.Logger

	mu      sync.Mutex
	byTool  map[toolKey]ToolSetting
	loaded  bool
	readAt  time.Time // when the read that filled byTool began
	localAt time.Time // when this process last wrote a setting
}

// fresh re-reads the settings if they are older than maxAge. A failed read
// keeps the settings last read, with a warning; with none read yet, it is
// an error: without them, nobody knows which tools an operator disabled.
func (s *settings) fresh(ctx context.Context) error {
	if s == nil || s.store == nil {
		return nil
	}
	s.mu.Lock()
	current := s.loaded && s.maxAge >= 0 && time.Since(s.readAt) < s.maxAge
	s.mu.Unlock()
	if current {
		return nil
	}
	start := time.Now()
	list, err := s.store.ToolSettingList(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.loaded && ctx.Err() != nil {
			return nil // the caller gave up: nothing went wrong with the store
		}
		if s.loaded {
			s.logger.Warn("catalogue: re-reading the operators' tool settings failed; applying the ones read last", "error", err)
			return nil
		}
		return fmt.Errorf("catalogue: reading the operators' tool settings: %w", err)
	}
	if s.loaded && (start.Before(s.readAt) || start.Before(s.localAt)) {
		// A newer read, or a write of this process, landed meanwhile:
		// this read may miss it.
		return nil
	}
	byTool := make(map[toolKey]ToolSetting, len(list))
	for _, st := range list {
		byTool[toolKey{st.Server, st.Tool}] = st
	}
	s.byTool, s.loaded, s.readAt = byTool, true, start
	return nil
}

// get returns the setting of a tool, if an operator made one.
func (s *settings) get(server, tool string) (ToolSetting, bool) {
	if s == nil {
		return ToolSetting{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byTool[toolKey{server, tool}]
	return st, ok
}

// put records a setting this process has just stored.
func (s *settings) put(st ToolSetting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byTool == nil {
		s.byTool = map[toolKey]ToolSetting{}
	}
	s.byTool[toolKey{st.Server, st.Tool}] = st
	s.localAt = time.Now()
}
