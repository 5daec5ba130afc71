// Package interop tests andon's MCP client against real peer implementations.
//
// The package has no code of its own. Its tests run andon's client against
// servers built on github.com/modelcontextprotocol/go-sdk and
// github.com/mark3labs/mcp-go (test-only dependencies): over stdio with a
// real subprocess, and over HTTP in every generation each peer serves
// (go-sdk's stateless and stateful Streamable HTTP handlers and its SSE
// handler; mcp-go's Streamable HTTP and SSE servers), on httptest servers
// on 127.0.0.1, and against @modelcontextprotocol/server-everything over
// stdio (internal/nodepeer installs it; without node the tests skip). They
// also run the go-sdk client against andon's mcptest
// server, to show that each side speaks the protocol as the other
// understands it. TestGatewayInterop runs andon's gateway between them:
// the go-sdk, mcp-go and TypeScript SDK clients, over stdio and Streamable
// HTTP, in front of go-sdk, mcp-go, server-everything and mcptest servers,
// and checks that a client's cancel reaches the server behind. Its
// benchmarks compare andon's client with go-sdk's and mcp-go's on the same
// server; docs/benchmarks.md has the numbers.
package interop
