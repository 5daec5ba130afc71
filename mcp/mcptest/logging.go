package mcptest

import (
	"encoding/json"
	"slices"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// logLevels are the protocol's log levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel answers logging/setLevel: the connection then sends log messages
// (the log tool's) of that level and above only.
func (c *serverConn) setLevel(m *jsonrpc.Message, out outbox) {
	var p struct {
		Level string `json:"level"`
	}
	json.Unmarshal(m.Params, &p)
	if !slices.Contains(logLevels, p.Level) {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown level " + p.Level})
		return
	}
	c.mu.Lock()
	c.logLevel = p.Level
	c.mu.Unlock()
	reply(out, m.ID, map[string]any{}, nil)
}

// logs reports whether a message of level passes the connection's level
// (every message does until logging/setLevel says otherwise) or, on
// 2026-07-28, the level the request's _meta asks for (none without it).
func (c *serverConn) logs(level string, meta requestMeta, modern bool) bool {
	if modern {
		return meta.LogLevel != "" && slices.Index(logLevels, level) >= slices.Index(logLevels, meta.LogLevel)
	}
	c.mu.Lock()
	min := c.logLevel
	c.mu.Unlock()
	return slices.Index(logLevels, level) >= slices.Index(logLevels, min)
}
