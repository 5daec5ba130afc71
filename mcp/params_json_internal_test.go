package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// checkEncodeParams fails t unless encodeParams(p) is what json.Marshal(p)
// is, byte for byte.
func checkEncodeParams(t *testing.T, p requestParams) {
	t.Helper()
	got, err := encodeParams(p)
	if err != nil {
		t.Fatalf("encodeParams(%+v): %v", p, err)
	}
	want, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json.Marshal(%+v): %v", p, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeParams = %s\njson.Marshal = %s", got, want)
	}
}

// marshalArgs is CallTool's encoding of arguments.
func marshalArgs(t *testing.T, args any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEncodeParamsMatchesMarshal: a tools/call's params encode as
// json.Marshal encodes them, for every revision's _meta and awkward names,
// arguments, client info and progress tokens.
func TestEncodeParamsMatchesMarshal(t *testing.T) {
	c := newClient(&ClientOptions{ClientInfo: Implementation{Name: "a<b>&c", Title: "Tïtle \"q\"", Version: "1\n"}})
	plain := newClient(nil)
	metas := []*requestMeta{
		nil,
		{},
		{ProgressToken: "andon-7"},
		{ProtocolVersion: Version20260728, ClientCapabilities: plain.modernCaps, ClientInfo: &plain.opts.ClientInfo},
		{ProtocolVersion: Version20260728, ClientCapabilities: c.modernCaps, ClientInfo: &c.opts.ClientInfo, ProgressToken: "tok\u2028", LogLevel: "debug"},
		{LogLevel: "warning"},
		{traceMeta: &traceMeta{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Tracestate: "rojo=00f067aa0ba902b7"}},
		{ProtocolVersion: Version20260728, ClientCapabilities: plain.modernCaps, traceMeta: &traceMeta{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		{ClientInfo: &Implementation{}},
	}
	argss := []json.RawMessage{
		nil,
		marshalArgs(t, map[string]any{"text": "hello"}),
		marshalArgs(t, map[string]any{"html": "<a href='x'>&</a>", "u": "\u2028\u2029\xff", "n": []any{1.5, nil, true}}),
		marshalArgs(t, json.RawMessage(" { \"spaced\" : [ 1 , 2 ] , \"h\":\"<\" } ")),
		marshalArgs(t, struct {
			A string `json:"a"`
		}{"é"}),
	}
	names := []string{"echo", "", "name with \"quotes\"", "<tool>", "a<b", "a>b", "a&b", "naïve", "tab\there", "\x00"}
	for _, meta := range metas {
		for _, args := range argss {
			for _, name := range names {
				checkEncodeParams(t, &callToolParams{paramsBase: paramsBase{Meta: meta}, Name: name, Arguments: args})
			}
		}
	}
	// The shapes the fast path leaves to json.Marshal still encode.
	checkEncodeParams(t, &callToolParams{Name: "x", Task: &taskMetadata{}})
	checkEncodeParams(t, &callToolParams{paramsBase: paramsBase{RequestState: json.RawMessage(`"s"`), InputResponses: map[string]json.RawMessage{"a": json.RawMessage(`{}`)}}, Name: "x"})
	checkEncodeParams(t, &listParams{Cursor: "c"})
}

// FuzzEncodeParams: for any name, arguments, client info and token,
// encodeParams and json.Marshal agree.
func FuzzEncodeParams(f *testing.F) {
	f.Add("echo", `{"text":"hello"}`, "andon", "", "devel", "andon-1", "debug")
	f.Add("<&>", `{"a":"\u2028"}`, "\xff", "t", "", "", "")
	f.Fuzz(func(t *testing.T, name, args, infoName, title, version, token, level string) {
		var raw json.RawMessage
		if json.Valid([]byte(args)) && len(args) > 0 && args[0] == '{' {
			raw = marshalArgs(t, json.RawMessage(args))
		}
		meta := &requestMeta{ProtocolVersion: Version20260728, ClientCapabilities: json.RawMessage(`{}`), ClientInfo: &Implementation{Name: infoName, Title: title, Version: version}, ProgressToken: token, LogLevel: LoggingLevel(level)}
		checkEncodeParams(t, &callToolParams{paramsBase: paramsBase{Meta: meta}, Name: name, Arguments: raw})
		checkEncodeParams(t, &callToolParams{Name: name, Arguments: raw})
	})
}
