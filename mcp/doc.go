// Package mcp is andon's Model Context Protocol client, built so that a call
// can always be stopped.
//
// A [Client] is one connection to one server, opened with [Connect] over a
// [Transport]: [Command] runs the server as a subprocess and speaks stdio;
// [Stream] speaks the same framing over any byte stream, such as one end of
// a [net.Pipe] for a server in the same process. Connect negotiates the
// protocol revision: it tries 2026-07-28 (server/discover, with the
// per-request _meta envelope) and falls back to the newest handshake-era
// revision (2025-11-25 down to 2024-11-05) the server accepts;
// [ClientOptions].ProtocolVersion pins one.
//
//	c, err := mcp.Connect(ctx, mcp.Command("my-server", "--stdio"), nil)
//	if err != nil { … }
//	defer c.Close()
//	res, err := c.CallTool(ctx, "search", map[string]any{"q": "andon"},
//		&mcp.CallOptions{Timeout: 5 * time.Second})
//
// # Stopping a call
//
// Cancellation is the context. A call ends when the server answers, when its
// context is cancelled ([ErrCancelled], matching [context.Canceled] and the
// context's cause), or when a deadline passes ([ErrTimeout], matching
// [context.DeadlineExceeded]): the call's [CallOptions].Timeout, the client's
// default RequestTimeout, MaxTotalTimeout, or the context's own deadline. If
// cancellation and a deadline both apply, cancellation wins.
//
// The client checks for interruption before it sends anything (a call
// cancelled in advance uses no request id and puts nothing on the wire),
// after its write returns, and while it waits. An interrupted call returns at
// once; the client forgets it, so a reply or progress that comes later is
// dropped, never returned to anyone; and the server is told the way its
// transport and revision require — on stdio, notifications/cancelled naming
// the request (with the _meta envelope on 2026-07-28), sent after the caller
// already has its error. A notification that cannot be sent is logged at
// warn level and changes nothing else. initialize and server/discover are
// never cancelled by notification: a handshake is abandoned by closing the
// connection attempt.
//
// Any number of calls may be in flight on one client, and cancelling one
// touches no other. The connection stays usable after any number of
// cancellations and timeouts. [Client.Close] is bounded: calls in flight
// fail with [ErrClosed], and a subprocess gets its stdin closed, a grace
// period, SIGTERM, then SIGKILL (on Windows, after the grace period, it is
// killed).
//
// # Beyond tools
//
// Resources ([Client.ListResources], [Client.ResourceTemplates],
// [Client.ReadResource], [Client.Subscribe]), prompts ([Client.ListPrompts],
// [Client.GetPrompt]), [Client.Complete] and [Client.SetLoggingLevel] take
// the same [CallOptions] and go the same way as a tool call: the same
// budgets, and an interrupted resources/read is abandoned on the wire as a
// tools/call is. Listings are iterators that fetch a page as the caller
// ranges. Server notifications reach [ClientOptions].OnResourceUpdated and
// OnListChanged; server log messages reach the Logger with the server's
// name and level. [Client.SetRoots] changes the roots offered to the server
// and tells it (notifications/roots/list_changed, handshake era). On
// 2026-07-28 a listing's ttlMs and cacheScope are the listing's
// [CacheHint] ([Client.ListCacheHint]), and change notifications come on a
// subscriptions/listen stream that [Client.Listen] holds open — stopped,
// like any request, by its context.
//
// # Tasks
//
// A call may become a task: work that outlives its request, with an id that
// is a durable handle on it (2025-11-25 core tasks; the 2026-07-28
// io.modelcontextprotocol/tasks extension). [Client.CallTool] runs a tool
// whose [Tool].TaskSupport is "required" as one, follows it to its end and
// returns its result; [CallOptions].OnTaskCreated hands the handle over to
// be persisted. The caller's context and budget bound the whole task, and
// an interrupted one is cancelled with tasks/cancel, never
// notifications/cancelled; [CallOptions].OnTaskCancel is told the server's
// answer, and [CallOptions].DetachTask lets a caller whose context ended
// for another reason than a cancel (a process shutting down) leave the task
// running for another client to follow. [Client.GetTask], [Client.CancelTask],
// [Client.ListTasks] and [Client.FollowTask] reach a task by id from any
// client of the same server under the same revision.
//
// # Errors
//
// A tool that fails is a result with [CallToolResult].IsError set, not a Go
// error. A server's error response is an [*RPCError]; a message that breaks
// the protocol is a [*ProtocolError]; a connection that is gone is
// [ErrClosed], with the reason (such as the server's exit status) in the text.
package mcp
