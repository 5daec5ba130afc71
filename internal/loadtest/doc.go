// Package loadtest is andon's load harness: it starts andon — in this
// process as one node, or as real processes (`andon serve --workers 0`
// beside `andon worker` processes) — puts N runs in flight, each holding a
// call to mcptest's slow tool over stdio or HTTP, and then cancels them
// one at a time or in storms, measuring what an operator and the store
// feel:
//
//   - cancel request → the MCP server received it ("wire": the record of
//     the notifications/cancelled it read, or on 2026-07-28 HTTP of the
//     call's response stream closing) and → the tool's handler stopped
//     ("stopped": its tool_cancelled record), each from the moment before
//     the cancel is asked for (the harness and mcptest read the same wall
//     clock), p50/p99/max;
//   - the cancel's own cost: until Runtime.Cancel returned in process, the
//     API's took_ms across processes (where runs are submitted and
//     cancelled through the API, as an operator does);
//   - store statements per cancel and per short run, counted at the
//     store's dialect seam ([sqlstore.StatementCounter]), in process only
//     (across processes they are other processes');
//   - runs per second for one-tool-call runs;
//   - memory and goroutines per in-flight run, and the watcher's store
//     reads per interval while they are in flight.
//
// It also checks what it measures: every cancelled call was seen
// cancelled by the server, no run is left running, and (for a caller that
// asks) no goroutine outlives the harness. Those checks are this package's
// tests, at a small N; the numbers are its benchmarks and the program
// cmd/andon-load, and are never asserted.
//
// The MCP server is the mcptest server in a process of its own: the
// running executable started again with [ServeEnv] set. A program or test
// binary that uses the harness calls [MaybeServe] first thing in main or
// TestMain.
package loadtest
