// Package interop tests andon's MCP client against real peer implementations.
//
// The package has no code of its own: its tests run andon's client against
// a server built on github.com/modelcontextprotocol/go-sdk (a test-only
// dependency), over stdio with a real subprocess, and run the go-sdk client
// against andon's mcptest server, to show that each side speaks the
// protocol as the other understands it. Its benchmarks compare andon's
// client with go-sdk's on the same server; docs/benchmarks.md has the
// numbers.
package interop
