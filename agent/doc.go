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
package agent
