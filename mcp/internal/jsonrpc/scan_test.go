package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// decodeReference is Decode as it was before the fast path: encoding/json
// alone. The fast path must agree with it on every input.
func decodeReference(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, &DecodeError{Reason: "not a JSON object: " + truncate(data)}
	}
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, &DecodeError{Reason: err.Error()}
	}
	m := &Message{Method: w.Method, Params: w.Params, Result: w.Result, Error: w.Error}
	if w.ID != nil {
		m.ID = *w.ID
	}
	fail := func(reason string) (*Message, error) { return nil, &DecodeError{ID: m.ID, Reason: reason} }
	if w.JSONRPC != Version {
		return fail(fmt.Sprintf("jsonrpc is %q, want %q", w.JSONRPC, Version))
	}
	if m.Method != "" {
		if m.Result != nil || m.Error != nil {
			return fail("a request or notification carries a result or error")
		}
		return m, nil
	}
	if (m.Result == nil) == (m.Error == nil) {
		return fail("a response needs exactly one of result and error")
	}
	if !m.ID.valid && m.Result != nil {
		return fail("a result without an id")
	}
	return m, nil
}

// scanSeeds are messages of every shape, plain and not: each is a seed of
// FuzzScanMatchesReference and a case of TestScanMatchesReference.
var scanSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5e-3,true,false,null,"\u00e9\n"]}}}`,
	`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello world"}],"structuredContent":{"text":"hello world"},"resultType":"complete"}}`,
	` { "jsonrpc" : "2.0" , "id" : "abc" , "result" : { } } `,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"andon-1","progress":0.5}}`,
	`{"jsonrpc":"2.0","id":-0,"result":[]}`,
	`{"jsonrpc":"2.0","id":9223372036854775807,"result":1}`,
	`{"jsonrpc":"2.0","id":9223372036854775808,"result":1}`,
	`{"jsonrpc":"2.0","id":-9223372036854775808,"result":1}`,
	`{"jsonrpc":"2.0","id":-9223372036854775809,"result":1}`,
	`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
	`{"jsonrpc":"2.0","id":1e2,"result":{}}`,
	`{"jsonrpc":"2.0","id":01,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":"2.0","id":"a\"b","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"params":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","ID":1,"Result":{}}`,
	`{"JSONRPC":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"result":[]}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"jsonrpc":"2\u002e0","id":1,"result":{}}`,
	`{"jsonrpc":2,"id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1},"result":{"b":2}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","method":5}`,
	`{"jsonrpc":"2.0","method":"m\u00e9"}`,
	`{"jsonrpc":"2.0","method":"é"}`,
	`{"jsonrpc":"2.0","method":"x","other":{"deep":[[[{}]]]},"more":"\ud800"}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":"` + "\x01" + `"}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":"\x"}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":"\u12G4"}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":-}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":1.}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":1e}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":1E+5}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":nul}}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a":1,}}`,
	`{"jsonrpc":"2.0","method":"x","params":[1,]}`,
	`{"jsonrpc":"2.0","method":"x","params":{"a" 1}}`,
	`{"jsonrpc":"2.0","method":"x",}`,
	`{"jsonrpc":"2.0","method":"x"}}`,
	`{"jsonrpc":"2.0","method":"x"} x`,
	`{"jsonrpc":"2.0","method":"x"`,
	`{"jsonrpc":"2.0","method":"x","params":"` + "\xff\xfe" + `"}`,
	`{"jsonrpc":"2.0","method":"x","params":{"` + "\xff" + `":1}}`,
	`{"jsonrpc":"2.0","method":"x","ſ":1}`,
	`{"jsonrpc":"2.0","method":"x","\u006d":1}`,
	`{"jsonrpc":"2.0","id":1,"method":""," result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"","result":{}}`,
	"{\"jsonrpc\":\"2.0\",\t\"id\":1,\r\n\"result\":{}}",
	"{\"jsonrpc\":\"2.0\",\v\"id\":1,\"result\":{}}",
	`{}`,
	`{"jsonrpc":"2.0","method":"x","params":` + deep(70) + `}`,
	`{"jsonrpc":"2.0","method":"x","params":` + deep(20) + `}`,
}

// deep returns n nested arrays.
func deep(n int) string {
	return string(bytes.Repeat([]byte("["), n)) + string(bytes.Repeat([]byte("]"), n))
}

// checkAgainstReference fails t if Decode and decodeReference disagree on
// data: both decode it to the same message, or both reject it the same way.
func checkAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := Decode(bytes.Clone(data))
	want, wantErr := decodeReference(bytes.Clone(data))
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("Decode(%q): error %v, reference %v", data, gotErr, wantErr)
	}
	if gotErr != nil {
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("Decode(%q): error %q, reference %q", data, gotErr, wantErr)
		}
		return
	}
	if got.ID != want.ID || got.Method != want.Method ||
		!bytes.Equal(got.Params, want.Params) || (got.Params == nil) != (want.Params == nil) ||
		!bytes.Equal(got.Result, want.Result) || (got.Result == nil) != (want.Result == nil) ||
		!reflect.DeepEqual(got.Error, want.Error) {
		t.Fatalf("Decode(%q) = %+v, reference %+v", data, got, want)
	}
}

// TestScanMatchesReference: on every seed, Decode agrees with encoding/json.
func TestScanMatchesReference(t *testing.T) {
	plain := 0
	for _, s := range scanSeeds {
		checkAgainstReference(t, []byte(s))
		if _, ok := scanMessage(bytes.TrimSpace([]byte(s))); ok {
			plain++
		}
	}
	// The fast path is taken where it should be, not skipped for all.
	if plain < 10 {
		t.Errorf("the fast path decoded only %d of the seeds", plain)
	}
}

// TestScanTakesTheHotShapes: the messages of a round trip decode on the
// fast path, and their raw values are copies (the frame's buffer is reused).
func TestScanTakesTheHotShapes(t *testing.T) {
	for _, s := range scanSeeds[:5] {
		data := []byte(s)
		m, ok := scanMessage(bytes.TrimSpace(data))
		if !ok {
			t.Fatalf("scanMessage(%s) left it to encoding/json", s)
		}
		raw := append(m.Params, m.Result...)
		for i := range data {
			data[i] = 'X'
		}
		if !bytes.Equal(raw, append(m.Params, m.Result...)) {
			t.Fatalf("the decoded raw values of %s share the input's buffer", s)
		}
	}
}

// FuzzScanMatchesReference: on any input, Decode (fast path or not) and
// encoding/json agree.
func FuzzScanMatchesReference(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, data)
	})
}
