package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// toolResultSeeds are tools/call results of every shape, plain and not.
var toolResultSeeds = []string{
	`{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}`,
	`{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"},"isError":false,"_meta":{"k":[1,2]}}`,
	` { "content" : [ ] , "isError" : true } `,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource_link","uri":"file:///x","name":"x"},{"type":"resource","resource":{"uri":"a","text":"b"}}]}`,
	`{"content":[{"type":"text","text":"naïve 日本"}]}`,
	`{"content":[{"type":"text","text":"line\nbreak \"q\""}]}`,
	`{"content":[{"type":"text","text":"` + "\xff" + `"}]}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"content":[{"Type":"text"}]}`,
	`{"Content":[]}`,
	`{"content":null}`,
	`{"content":[null]}`,
	`{"content":[1]}`,
	`{"content":{}}`,
	`{"content":[{"type":null}]}`,
	`{"content":[{"type":"text","extra":{"deep":[true,null]}}]}`,
	`{"isError":"yes"}`,
	`{"isError":null}`,
	`{"isError":tru}`,
	`{"resultType":"input_required","inputRequests":{"a":{}}}`,
	`{"resultType":"complete","requestState":"s"}`,
	`{"resultType":"task"}`,
	`{"resultType":5}`,
	`{"structuredContent":null}`,
	`{"structuredContent":[1,2,{"a":"b"}],"_meta":"m"}`,
	`{"_meta":{},"_Meta":{}}`,
	`{"other":1,"content":[]}`,
	`{"content":[],}`,
	`{"content":[]}x`,
	`{"content":[{"resource":"r","resource":"s"}]}`,
	`{}`,
	`[]`,
	`null`,
	`{"content":[{"type":"text","text":"a"}]`,
}

// checkToolResult fails t unless decodeResult decodes data into a
// toolResult exactly as json.Unmarshal does, or fails as it does.
func checkToolResult(t *testing.T, data []byte) {
	t.Helper()
	var got, want toolResult
	gotErr := decodeResult(bytes.Clone(data), &got)
	wantErr := json.Unmarshal(bytes.Clone(data), &want)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("decodeResult(%q): error %v, json.Unmarshal %v", data, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeResult(%q) = %+v\njson.Unmarshal = %+v", data, got, want)
	}
}

// TestToolResultMatchesUnmarshal: on every seed, the fast path and
// json.Unmarshal agree, and the usual shapes take the fast path.
func TestToolResultMatchesUnmarshal(t *testing.T) {
	for _, s := range toolResultSeeds {
		checkToolResult(t, []byte(s))
	}
	for _, s := range toolResultSeeds[:5] {
		var r toolResult
		if !r.scan([]byte(s)) {
			t.Errorf("the fast path left %s to encoding/json", s)
		}
	}
	// A shape it leaves leaves the result untouched for encoding/json.
	r := toolResult{CallToolResult: CallToolResult{Content: []Content{{Type: "x"}}}}
	if r.scan([]byte(`{"content":[{"type":"text"},{"Type":"image"}]}`)) || len(r.Content) != 1 || r.Content[0].Type != "x" {
		t.Errorf("a shape left to encoding/json changed the result: %+v", r)
	}
}

func FuzzToolResultMatchesUnmarshal(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkToolResult(t, data)
	})
}
