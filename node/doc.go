// Package node assembles andon: one [New] wires what a process that runs
// agents needs — the store with its vault and audit log, guarded egress, the
// catalogue of MCP tools, the runtime with its River queue, the metrics, and
// the cancel fan-out that carries a cancel to every process on the database
// — and returns a [Node] to [Node.Run] (execute runs) and to serve through
// [Node.Handler] (the JSON API and the console).
//
// `andon serve` and `andon worker` are flag parsing over this package. A
// program that embeds andon builds the same node, so it keeps andon's core
// promise without copying main: a cancel made by any process reaches the
// MCP wire of the process holding the run — on PostgreSQL by NOTIFY at
// once, on either backend by cancelling the run's River job, and by the
// watcher's poll as the backstop. Whatever reaches a node from outside is a
// hint: only the run's row cancels.
package node
