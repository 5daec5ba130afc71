package mcptest

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// Completion (completion/complete) knows two arguments: greet's style (of
// the prompt ref) and large's bytes (of the resource template
// mcptest://large/{bytes}); it offers the candidates that start with the
// typed value. Any other ref or argument is -32602.
var completions = map[string][]string{
	"ref/prompt greet style":                     {"a pirate", "a poet", "a robot"},
	"ref/resource mcptest://large/{bytes} bytes": {"1", "10", "100", "1000"},
}

func (c *serverConn) complete(m *jsonrpc.Message, modern bool, out outbox) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()})
		return
	}
	candidates, ok := completions[p.Ref.Type+" "+p.Ref.Name+p.Ref.URI+" "+p.Argument.Name]
	if !ok {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "nothing to complete for " + p.Ref.Type + " " + p.Ref.Name + p.Ref.URI + " " + p.Argument.Name})
		return
	}
	values := slices.DeleteFunc(slices.Clone(candidates), func(v string) bool { return !strings.HasPrefix(v, p.Argument.Value) })
	res := map[string]any{"completion": map[string]any{"values": values, "total": len(values), "hasMore": false}}
	if modern {
		res["resultType"] = "complete"
	}
	reply(out, m.ID, res, nil)
}
