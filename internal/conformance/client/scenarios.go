package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/andonhq/andon/mcp"
)

// scenarioFunc plays one client scenario against the server at e.url.
type scenarioFunc func(ctx context.Context, e *env) error

// scenarios are the client scenarios of conformance 0.1.16 and
// 0.2.0-alpha.12 by name. Every auth/ scenario is played by playAuth (see
// lookup).
var scenarios = map[string]scenarioFunc{
	// 0.1.16 and later.
	"initialize":                          playInitialize,
	"tools_call":                          playToolsCall,
	"elicitation-sep1034-client-defaults": playElicitationDefaults,
	"sse-retry":                           playSSERetry,

	// 0.2.0-alpha.12: 2026-07-28 (stateless) scenarios.
	"request-metadata":                 playRequestMetadata,
	"sep-2322-client-request-state":    playRequestState,
	"http-standard-headers":            playStandardHeaders,
	"http-custom-headers":              playCustomHeaders,
	"http-invalid-tool-headers":        playInvalidToolHeaders,
	"json-schema-ref-no-deref":         playListOnly,
	"json-schema-2020-12-preservation": playSchemaPreservation,

	// 0.2.0-alpha.12: the skills extension (SEP-2640), which andon does not
	// implement. A client without it never lists or reads skills; the
	// scenarios score that as SKIPPED.
	"sep-2640-client-no-prefetch":        playWithoutSkills,
	"sep-2640-client-verify-digest":      playWithoutSkills,
	"sep-2640-client-verify-size":        playWithoutSkills,
	"sep-2640-client-verify-frontmatter": playWithoutSkills,
}

// authPrefix starts the name of every OAuth scenario.
const authPrefix = "auth/"

// lookup returns the player of the scenario name.
func lookup(name string) (scenarioFunc, bool) {
	if f, ok := scenarios[name]; ok {
		return f, true
	}
	if strings.HasPrefix(name, authPrefix) && len(name) > len(authPrefix) {
		return playAuth, true
	}
	return nil, false
}

// scenarioList lists the known scenarios for a usage message, one a line.
func scenarioList() string {
	names := make([]string, 0, len(scenarios)+1)
	for n := range scenarios {
		names = append(names, n)
	}
	names = append(names, authPrefix+"* (any OAuth scenario)")
	slices.Sort(names)
	return "  " + strings.Join(names, "\n  ") + "\n"
}

// playInitialize: the handshake (2025-11-25 here: the server answers
// server/discover with an empty result), then tools/list.
func playInitialize(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	return nil
}

// playListOnly connects and lists the tools: json-schema-ref-no-deref
// checks that listing a tool whose inputSchema has a network $ref never
// fetches it (andon keeps a schema as raw JSON and resolves nothing).
func playListOnly(ctx context.Context, e *env) error { return playInitialize(ctx, e) }

// playToolsCall calls add_numbers with a=5, b=3.
func playToolsCall(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, _, err := findTool(ctx, c, "add_numbers"); err != nil {
		return err
	}
	res, err := e.callTool(ctx, c, "add_numbers", map[string]any{"a": 5, "b": 3})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("add_numbers reported an error: %s", res.Text())
	}
	return nil
}

// playElicitationDefaults calls test_client_elicitation_defaults, during
// which the server sends elicitation/create with a schema whose every
// field has a default; the handler accepts with those defaults (SEP-1034).
func playElicitationDefaults(ctx context.Context, e *env) error {
	return callOnce(ctx, e, &mcp.ClientOptions{ElicitationHandler: acceptWithDefaults(nil)}, "test_client_elicitation_defaults")
}

// callOnce connects with opts, checks that tool is listed, and calls it
// without arguments: the scenarios whose checks run on the server's side.
func callOnce(ctx context.Context, e *env, opts *mcp.ClientOptions, tool string) error {
	c, err := e.connect(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, _, err := findTool(ctx, c, tool); err != nil {
		return err
	}
	_, err = e.callTool(ctx, c, tool, map[string]any{})
	return err
}

// playSSERetry calls test_reconnection, whose response stream the server
// closes after a priming event with retry: 500; the response comes on the
// GET stream the client must reopen, after that delay, with Last-Event-ID
// (SEP-1699).
func playSSERetry(ctx context.Context, e *env) error {
	return callOnce(ctx, e, nil, "test_reconnection")
}

// playRequestMetadata connects and lists the tools. The server checks the
// _meta envelope and the MCP-Protocol-Version header of every request, and
// rejects the first one with -32022 (listing 2026-07-28 as supported) to
// see the client retry with a supported version (SEP-2575).
func playRequestMetadata(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.ProtocolVersion() != mcp.Version20260728 {
		return fmt.Errorf("negotiated %s; the server supports only %s", c.ProtocolVersion(), mcp.Version20260728)
	}
	if _, err := c.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	return nil
}

// playRequestState calls the four SEP-2322 tools on a 2026-07-28 server:
// two answer input_required (one with requestState, one without) and are
// retried with the elicitation's answer, one must carry no leftovers of
// another call, and one's result has no resultType (so is complete).
func playRequestState(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, &mcp.ClientOptions{ElicitationHandler: acceptWithDefaults(map[string]any{"confirmed": true})})
	if err != nil {
		return err
	}
	defer c.Close()
	var errs []error
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
		if _, err := e.callTool(ctx, c, name, map[string]any{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// playStandardHeaders lists the tools and calls the first one, so the
// server sees Mcp-Method and Mcp-Name (SEP-2243). andon's client has no
// resources or prompts methods, so the resources/* and prompts/* checks
// are not exercised (the scenario scores them SKIPPED).
func playStandardHeaders(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if len(tools) == 0 {
		return errors.New("the server offers no tools")
	}
	_, err = e.callTool(ctx, c, tools[0].Name, map[string]any{})
	return err
}

// playCustomHeaders lists the tools (whose inputSchema marks parameters
// with x-mcp-header) and makes the calls the runner lists in the context's
// toolCalls; the server checks the Mcp-Param-* headers (SEP-2243).
func playCustomHeaders(ctx context.Context, e *env) error {
	calls, err := toolCalls(e.context)
	if err != nil {
		return err
	}
	if len(calls) == 0 {
		return fmt.Errorf("%s has no toolCalls", envContext)
	}
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var errs []error
	for _, call := range calls {
		if _, err := e.callTool(ctx, c, call.Name, call.Arguments); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// playInvalidToolHeaders lists the tools and calls every one the client
// returns. The server offers one valid tool and eleven whose x-mcp-header
// annotations are invalid, which a conformant client drops from the list.
func playInvalidToolHeaders(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var errs []error
	for _, t := range tools {
		if _, err := e.callTool(ctx, c, t.Name, map[string]any{"region": "us-west1"}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// playSchemaPreservation lists the tools and sends the inputSchema of
// json_schema_2020_12_tool, exactly as received, to json_schema_echo,
// so the server can see which 2020-12 keywords survived (SEP-1613).
func playSchemaPreservation(ctx context.Context, e *env) error {
	c, err := e.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	focal, _, err := findTool(ctx, c, "json_schema_2020_12_tool")
	if err != nil {
		return err
	}
	if len(focal.InputSchema) == 0 {
		return errors.New("json_schema_2020_12_tool has no inputSchema")
	}
	_, err = e.callTool(ctx, c, "json_schema_echo", map[string]any{"schema": focal.InputSchema})
	return err
}

// playWithoutSkills connects and lists the tools, as any andon client
// would: it has no skills extension, so it never lists or reads skills.
func playWithoutSkills(ctx context.Context, e *env) error { return playInitialize(ctx, e) }

// toolCall is one entry of the context's toolCalls.
type toolCall struct {
	Name      string
	Arguments map[string]any
}

// toolCalls reads {"toolCalls": [{"name": …, "arguments": {…}}, …]} from
// the scenario context.
func toolCalls(sc map[string]any) ([]toolCall, error) {
	raw, ok := sc["toolCalls"]
	if !ok {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: toolCalls is not an array", envContext)
	}
	var calls []toolCall
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: toolCalls[%d] is not an object", envContext, i)
		}
		name, _ := obj["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("%s: toolCalls[%d] has no name", envContext, i)
		}
		args, _ := obj["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		calls = append(calls, toolCall{Name: name, Arguments: args})
	}
	return calls, nil
}
