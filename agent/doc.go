// Package agent is andon's runtime: persisted agent runs that a model
// drives through tools, and that stop within a bounded time when cancelled.
//
// A run is a row in a [Store] (package sqlstore implements it); its status
// is the one definition of cancelled. Every change of status is a guarded
// transition that reports whether it won: of two cancels, one wins; a
// cancelled run is terminal, and no resume, approval, claim, requeue or
// reaper path accepts it.
//
// # The path of a cancel
//
// [Runtime.Cancel] moves the row to cancelled, then tells the [Watcher]:
// every context registered under the run — the model call and the tool
// call in flight — is cancelled with cause [ErrRunCancelled], so an MCP
// call is abandoned on the wire at once. Another process learns of it from
// its own watcher: a notification ([Watcher.Hint]) makes it read the row at
// once, and its backstop poll reads the status of every watched run in one
// query per interval, however many calls are in flight. Only the row
// cancels: a hint it does not back changes nothing. Before
// every tool call the executor also reads the row afresh, so no call (and
// no credential) goes out for a run that is already cancelled.
//
// At every step boundary the executor probes the row: a cancelled run
// records the step it just made and stops, without settling and without
// clearing its write fence.
//
// # The write fence
//
// A tool that writes (see [Effect]) stamps the run's pending effect before
// it runs; the stamp is cleared only after the call's step is recorded on a
// run that is not cancelled. A run found with a non-idempotent write in
// flight — after a crash, a lost lease or a cancel — is never retried:
// [MayRetry] says no, and the reaper dead-letters it instead. A write
// without a persisted run and lease is refused before it happens.
//
// # Queues
//
// [Runtime.Run] claims queued runs from the store itself, or, with a [Queue]
// (River, in package sqlstore), works the runs the queue hands out:
// [Runtime.Work] decides from the row what a handed-out run needs — claim
// and execute it, reap it (asking the fence) if the job was handed out again
// after its worker vanished, or nothing.
//
// # Approvals
//
// A tool that requires approval suspends the run before it executes
// (waiting_for_approval), naming the call it waits on exactly ([Run.Pending],
// a [CallRef]: the model step that asked for it, its place in that step,
// the tool and [ArgsDigest] of its arguments — never the provider's call
// id, which providers reuse). [Runtime.Approve], [Runtime.Deny] or
// [Runtime.Decide] (which may name the call the operator was shown) audit
// the decision (Config.Audit), store it as an [Approval] naming that call,
// and resume the run in a new leased segment (through the queue, when there
// is one). A decision covers the call it names and no other: a later call
// with the same id, or the same tool with other arguments, waits for its
// own. A denied call is not made; the model is told, and the run goes on.
// A [FourEyesTool] refuses its run's owner's approval ([ErrFourEyes])
// unless they are an admin, which is audited as an override. The
// conversation is rebuilt from the recorded steps and decisions, so a
// resumed run — after an approval, or on another worker after a crash —
// never replays a call that completed.
//
// # MCP tasks
//
// A call that its server runs as an MCP task is a durable handle on remote
// work. With a [Store] that is also a [TaskStore], the executor hands each
// call a [TaskTrace] on its context ([WithTaskTrace]); the tool reports the
// task the moment it exists, and the handle — server, task id, protocol
// revision — is persisted, guarded by the lease, before the call waits:
// a handle that cannot be persisted fails the call, whose tool cancels the
// task. Then the rules are:
//
//   - The process holding the call cancels the task itself (its MCP client
//     sends tasks/cancel when the run's context is cancelled) and records
//     the server's answer ([TaskTrace].Cancelled), one task_cancel audit
//     row; the reaper does not send it again. When no live
//     process holds it, [Runtime.CancelRun] sends tasks/cancel with the
//     persisted id through [TaskTools] and reports the server's answer; the
//     reaper ([Runtime.ReapTasks]) does so for any task still open a lease
//     after its run ended. Each is a task_cancel audit row.
//   - A run whose lease lapsed mid-task goes back to the queue with its
//     fence stamped ([TaskStore].RunRequeueStaleTask), and the next worker
//     follows the task ([TaskTools].FollowTask) instead of calling the tool
//     again: the task's result, failure or cancellation is the call's
//     step, which settles the fence. A server that cannot say
//     ([ErrTaskUnknown]) leaves the fence stamped, and the run is
//     dead-lettered.
//   - A shutdown, or a lost lease, is not a cancel: the call stops
//     following the task without tasks/cancel ([TaskTrace].Detach), leaving
//     the handle unsettled and the fence stamped for the next worker.
//   - The task is settled (no longer the call in flight) right after its
//     step is recorded and before the fence comes down.
package agent
