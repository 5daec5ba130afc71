package mcptest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRecorderAdd is the cost of one record on the goroutine that
// records it, with the records mirrored to a file (as -record does): what
// a server's read path pays per message it reads. The record is a
// notifications/cancelled as a client sends it.
//
//	go test -run '^$' -bench RecorderAdd -benchmem ./mcp/mcptest/
func BenchmarkRecorderAdd(b *testing.B) {
	raw := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1234,"reason":"run cancelled by load"}}`)
	params := json.RawMessage(`{"requestId":1234,"reason":"run cancelled by load"}`)
	f, err := os.Create(filepath.Join(b.TempDir(), "records.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := newRecorder()
	r.setFile(f)
	b.ReportAllocs()
	for b.Loop() {
		r.add(Record{Kind: Received, Method: "notifications/cancelled", Params: params, Raw: raw})
	}
	b.StopTimer()
	r.closeFile()
}
