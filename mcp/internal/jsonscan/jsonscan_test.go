package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `true`, `false`, `null`,
	`{"a":[1,{"b":"\u00e9\n\"\\\/"}],"c":null}`, `"` + "\xff" + `"`, `"é"`,
	`{"a":1,}`, `[1,]`, `01`, `1.`, `1e`, `-`, `.5`, `"\x"`, `"\u12G4"`, `"` + "\x01" + `"`,
	`nul`, `truex`, `{"a" 1}`, `{1:2}`, `[` + "\v" + `]`, " [ 1 , 2 ] ",
}

// checkValue fails t unless Value takes data exactly when encoding/json
// finds it valid (but for nesting deeper than MaxDepth, which it leaves).
func checkValue(t *testing.T, data []byte) {
	t.Helper()
	s := Scanner{Data: data}
	s.WS()
	ok := s.Value()
	s.WS()
	ok = ok && s.Pos == len(data)
	valid := json.Valid(data)
	shallow := bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= MaxDepth
	if ok && !valid || !ok && valid && shallow {
		t.Fatalf("Value(%q) = %v, json.Valid = %v", data, ok, valid)
	}
}

// checkText fails t unless what Text takes decodes, with encoding/json, to
// the bytes it returned.
func checkText(t *testing.T, data []byte) {
	t.Helper()
	s := Scanner{Data: data}
	v, ok := s.Text()
	if !ok {
		return
	}
	var want string
	if err := json.Unmarshal(data[:s.Pos], &want); err != nil {
		t.Fatalf("Text took %q, which encoding/json rejects: %v", data[:s.Pos], err)
	}
	if string(v) != want {
		t.Fatalf("Text(%q) = %q, encoding/json %q", data, v, want)
	}
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		checkValue(t, []byte(s))
		checkText(t, []byte(s))
	}
	deep := bytes.Repeat([]byte("["), MaxDepth+1)
	deep = append(deep, bytes.Repeat([]byte("]"), MaxDepth+1)...)
	if s := (Scanner{Data: deep}); s.Value() {
		t.Errorf("Value took nesting deeper than MaxDepth")
	}
}

func FuzzScannerMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValue(t, data)
		checkText(t, data)
	})
}
