package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// envRawToolServer makes the test binary a stdio MCP server
// (rawToolServer) instead of running tests.
const envRawToolServer = "ANDON_TEST_RAW_TOOL_SERVER"

// rawTool is a Tool object with fields mcp.Tool does not model, as a
// server of a later revision sends it.
const rawTool = `{"name":"export","title":"Export","description":"Exports <all> & more.",` +
	`"inputSchema":{"type":"object","properties":{"table":{"type":"string"}}},` +
	`"outputSchema":{"type":"object"},` +
	`"execution":{"taskSupport":"required"},` +
	`"icons":[{"src":"https://example.com/export.png","mimeType":"image/png","sizes":["48x48"]}],` +
	`"annotations":{"readOnlyHint":false,"x-vendor-hint":7},` +
	`"_meta":{"example.com/owner":"data-team"}}`

// rawToolServer is a minimal handshake-era stdio MCP server offering one
// tool, rawTool, byte for byte. It returns when stdin ends.
func rawToolServer(in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false) // send rawTool byte for byte
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue // a notification
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch m.Method {
		case "initialize":
			reply["result"] = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}}
		case "tools/list":
			reply["result"] = json.RawMessage(`{"tools":[` + rawTool + `]}`)
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found"}
		}
		if enc.Encode(reply) != nil {
			return 1
		}
	}
	return 0
}

// TestToolsJSONKeepsEveryField: andon tools --json prints each Tool object
// as the server sent it, with the fields mcp.Tool does not model
// (execution.taskSupport, icons, an annotation of the vendor's), and does
// not escape what the server did not.
func TestToolsJSONKeepsEveryField(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The variable reaches the server through andon's environment.
	r := runAndonEnv(t, "", []string{envRawToolServer + "=1"}, "tools", "--json", "--protocol", "2025-11-25", "--stdio", shellQuote(exe))
	r.check(t, exitOK)
	var got []any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, r.stdout)
	}
	var want any
	if err := json.Unmarshal([]byte(rawTool), &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("tools --json printed\n%s\nwant the tool as sent:\n%s", r.stdout, rawTool)
	}
	if !strings.Contains(r.stdout, "<all> & more") {
		t.Errorf("the description was escaped:\n%s", r.stdout)
	}
}
