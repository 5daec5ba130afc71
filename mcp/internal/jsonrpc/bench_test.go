package jsonrpc

import "testing"

func BenchmarkEncodeRequest(b *testing.B) {
	m := &Message{ID: Int(42), Method: "tools/call", Params: []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"andon","version":"devel"}},"name":"echo","arguments":{"text":"hello world"}}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello world"}],"structuredContent":{"text":"hello world"},"resultType":"complete"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
