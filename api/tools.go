package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/token"
)

// Catalogue is what the servers-and-tools routes need of the catalogue of
// MCP servers; *catalogue.Catalogue implements it. With Config.Catalogue
// set, the handler serves (all JSON):
//
//	GET   /v1/servers                   {"servers": [MCPServer…]}
//	GET   /v1/tools?server=             {"tools": [Tool…]}, of one server or all
//	POST  /v1/servers/{name}/import     list the server's tools again → {"tools": [Tool…]}
//	PATCH /v1/tools/{name}              a ToolPatch → the Tool
//
// Listing connects to nothing: a server not imported yet shows 0 tools.
// Import connects under the request's context. A PATCH is an operator's
// setting of the tool, kept in the database with who made it and when,
// applied by every andon process on the database (within about a second)
// and winning over andon.yaml and annotations. Error codes: not_found (no
// such server or tool), bad_request (a body that is not a ToolPatch, an
// effect that is not one, a body that sets nothing), conflict (a server
// disabled in andon.yaml; a tool that would share its name with another
// server's), bad_gateway (the server failed: the message names it, never a
// secret).
type Catalogue interface {
	Servers() []catalogue.ServerInfo
	Tools(ctx context.Context, server string) ([]catalogue.ToolInfo, error)
	Import(ctx context.Context, server string) ([]catalogue.ToolInfo, error)
	SetTool(ctx context.Context, name string, ch catalogue.ToolChange, by string) (catalogue.ToolInfo, error)
}

var _ Catalogue = (*catalogue.Catalogue)(nil)

// MCPServer is a configured MCP server as the API shows it.
type MCPServer struct {
	Name string `json:"name"`
	// Transport is "stdio" or "http".
	Transport string `json:"transport"`
	// URL is an HTTP server's, without user information or query.
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
	// Enabled is andon.yaml's.
	Enabled bool `json:"enabled"`
	// Tools counts the imported tools: 0 if not imported.
	Tools int `json:"tools"`
	// Error is why the last import failed. A server that failed to
	// import is left out of runs' tool lists until it imports: a listing
	// tries it again from RetryAt (the back-off doubles with each of
	// Failures, the failures in a row). All three are empty once an
	// import succeeds.
	Error    string     `json:"error,omitempty"`
	FailedAt *time.Time `json:"failed_at,omitempty"`
	RetryAt  *time.Time `json:"retry_at,omitempty"`
	Failures int        `json:"failures,omitempty"`
	// Auth is "oauth" for a server behind OAuth. NeedsLogin says that
	// its last import failed for want of a login: Connect (POST
	// /v1/servers/{name}/connect) or `andon auth login NAME`.
	Auth       string `json:"auth,omitempty"`
	NeedsLogin bool   `json:"needs_login,omitempty"`
	// ToolsChange is the last change of the server's tools a re-import
	// found (the server sent notifications/tools/list_changed, or a call
	// found a tool gone); absent if none.
	ToolsChange *ToolsChange `json:"tools_change,omitempty"`
}

// ToolsChange is a change of a server's tools: when andon found it, why
// it looked ("list_changed" or "unknown_tool"), and the tools (their names
// on the server) added and removed.
type ToolsChange struct {
	At      time.Time `json:"at"`
	Why     string    `json:"why"`
	Added   []string  `json:"added"`
	Removed []string  `json:"removed"`
}

func toToolsChange(c *catalogue.ToolsChange) *ToolsChange {
	if c == nil {
		return nil
	}
	return &ToolsChange{At: c.At, Why: c.Why, Added: append([]string{}, c.Added...), Removed: append([]string{}, c.Removed...)}
}

// Tool is an imported tool as the API shows it, with the settings that
// apply to it now.
type Tool struct {
	// Name is the local name, mcp_<server>_<tool>; Tool the name on the
	// server.
	Name             string `json:"name"`
	Server           string `json:"server"`
	Tool             string `json:"tool"`
	Description      string `json:"description"`
	Enabled          bool   `json:"enabled"`
	Effect           string `json:"effect"`
	RequiresApproval bool   `json:"requires_approval"`
	// EffectSource is operator (a PATCH), config (andon.yaml), annotation
	// (a trusted server's) or default.
	EffectSource string `json:"effect_source"`
	// UpdatedBy and UpdatedAt say who last PATCHed the tool, and when.
	UpdatedBy string     `json:"updated_by,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// ToolPatch is the body of PATCH /v1/tools/{name}: each field set replaces
// the tool's setting, the others are kept.
type ToolPatch struct {
	Enabled          *bool   `json:"enabled,omitempty"`
	Effect           *string `json:"effect,omitempty"`
	RequiresApproval *bool   `json:"requires_approval,omitempty"`
}

// toolRoutes registers the servers-and-tools routes, each with the least
// role that may use it.
func (s *server) toolRoutes(mux *http.ServeMux) {
	if s.cfg.Catalogue == nil {
		return
	}
	s.route(mux, "GET /v1/servers", token.RoleViewer, s.listServers)
	s.route(mux, "GET /v1/tools", token.RoleViewer, s.listTools)
	s.route(mux, "POST /v1/servers/{name}/import", token.RoleAdmin, s.importServer)
	s.route(mux, "PATCH /v1/tools/{name}", token.RoleAdmin, s.patchTool)
}

func (s *server) listServers(w http.ResponseWriter, r *http.Request) {
	infos := s.cfg.Catalogue.Servers()
	out := make([]MCPServer, len(infos))
	for i, in := range infos {
		out[i] = MCPServer{Name: in.Name, Transport: in.Transport, URL: in.URL, Command: in.Command,
			Enabled: in.Enabled, Tools: in.Tools, Error: in.Error, Failures: in.Failures,
			FailedAt: timePtr(in.FailedAt), RetryAt: timePtr(in.RetryAt), Auth: in.Auth, NeedsLogin: in.NeedsLogin,
			ToolsChange: toToolsChange(in.Change)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": out})
}

func (s *server) listTools(w http.ResponseWriter, r *http.Request) {
	infos, err := s.cfg.Catalogue.Tools(r.Context(), r.URL.Query().Get("server"))
	if err != nil {
		s.toolFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": toTools(infos)})
}

func (s *server) importServer(w http.ResponseWriter, r *http.Request) {
	infos, err := s.cfg.Catalogue.Import(r.Context(), r.PathValue("name"))
	if err != nil {
		s.toolFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": toTools(infos)})
}

func (s *server) patchTool(w http.ResponseWriter, r *http.Request) {
	var p ToolPatch
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&p)
	if err == nil && dec.More() {
		err = errTrailingData
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the body is not a tool change: "+decodeProblem(err))
		return
	}
	ch := catalogue.ToolChange{Enabled: p.Enabled, RequiresApproval: p.RequiresApproval}
	if p.Effect != nil {
		ch.Effect = agent.Effect(*p.Effect)
		if !catalogue.ValidEffect(ch.Effect) {
			writeError(w, http.StatusBadRequest, "bad_request", "effect must be one of "+
				strings.Join([]string{string(agent.EffectReadOnly), string(agent.EffectIdempotentWrite), string(agent.EffectNonIdempotentWrite)}, ", "))
			return
		}
	}
	if ch.IsEmpty() {
		writeError(w, http.StatusBadRequest, "bad_request", "the body changes nothing: set enabled, effect or requires_approval")
		return
	}
	info, err := s.cfg.Catalogue.SetTool(r.Context(), r.PathValue("name"), ch, s.actor(r).ID)
	if err != nil {
		s.toolFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toTool(info))
}

// toolFail maps a catalogue error to its status and stable code.
func (s *server) toolFail(w http.ResponseWriter, err error) {
	var ie *catalogue.ImportError
	switch {
	case errors.Is(err, catalogue.ErrUnknownServer):
		writeError(w, http.StatusNotFound, "not_found", "no such server")
	case errors.Is(err, catalogue.ErrUnknownTool):
		writeError(w, http.StatusNotFound, "not_found", "no such tool: an imported tool's name is mcp_<server>_<tool> (import its server first)")
	case errors.Is(err, catalogue.ErrServerDisabled):
		writeError(w, http.StatusConflict, "conflict", "the server is disabled in the configuration (enabled: false)")
	case errors.Is(err, catalogue.ErrNameCollision):
		writeError(w, http.StatusConflict, "conflict", strings.TrimPrefix(err.Error(), "catalogue: "))
	case errors.As(err, &ie):
		// The text names the server and leaves out its secrets.
		writeError(w, http.StatusBadGateway, "bad_gateway", "importing the tools of server "+strconv.Quote(ie.Server)+" failed: "+
			strings.TrimPrefix(ie.Error(), "catalogue: server "+strconv.Quote(ie.Server)+": importing tools: "))
	default:
		s.fail(w, err)
	}
}

func toTools(infos []catalogue.ToolInfo) []Tool {
	out := make([]Tool, len(infos))
	for i, in := range infos {
		out[i] = toTool(in)
	}
	return out
}

func toTool(in catalogue.ToolInfo) Tool {
	t := Tool{Name: in.Name, Server: in.Server, Tool: in.Tool, Description: in.Description, Enabled: in.Enabled,
		Effect: string(in.Effect), RequiresApproval: in.RequiresApproval, EffectSource: string(in.EffectSource),
		UpdatedBy: in.UpdatedBy}
	t.UpdatedAt = timePtr(in.UpdatedAt)
	return t
}

// timePtr is t, or nil if it is zero: a time the JSON leaves out.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
