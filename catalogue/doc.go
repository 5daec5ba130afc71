// Package catalogue turns MCP servers into tools that agent runs can call.
//
// A [Config] (the servers: section of andon.yaml, read by [Load]) lists the
// servers: each a stdio command or an HTTP URL, with how andon treats its
// tools. A [Catalogue] made from it implements agent.Tools: it imports every
// enabled server's tools (tools/list, following pagination up to the
// client's page bound) and offers each under a local name that model APIs
// accept, "mcp_<server>_<tool>" (see [LocalName]). Two tools that would
// share a local name are an error that names both, never one silently
// replacing the other.
//
// # Budgets
//
// Every operation on a server has one deadline, set when it starts, from
// the server's [Budget] in andon.yaml (overridden per tool by
// [Server].Tools): timeout bounds a tool call with every leg it needs —
// waiting for another call's reconnection, (re)connecting and the
// handshake (within connect_timeout), the call — and max_timeout bounds a
// call whose progress resets its timeout (progress_resets_timeout). An
// import of a server's tools is bounded by the server's budget likewise.
// The deadline's cause names the bound, and a call that runs out of it
// fails saying in which leg and which bound.
//
// # A dead server never takes the others with it
//
// Each server imports on its own. A server that fails (down, never
// answering, stalled in the handshake or in tools/list) is left out of the
// listing and reported — [Catalogue.Servers], [Options].OnImport, the log
// — and left alone for a back-off before a listing tries it again, without
// waiting for it; no listing waits for a server that failed before, and no
// import holds a lock that another server's calls or imports need. A run
// whose model asks for a tool of such a server gets a failed step saying
// which server failed, and in which leg. See [Catalogue].
//
// # One connection per server
//
// Each server has one long-lived [mcp.Client], made when first needed and
// shared by every call. A tool call runs under the run's context, so
// cancelling the run cancels the call on the wire (notifications/cancelled
// on stdio, the right signal on each HTTP generation) and the call returns a
// result with agent.OutcomeCancelled — its own outcome, not an error that
// blames the server.
//
// When a server's connection is known to be gone before a call starts (the
// server exited, its session expired), the call reconnects first, under its
// own context and budget: cancelling the call abandons the reconnection,
// handshake included. A call whose connection fails once the request may have been
// sent is never retried — a half-sent write may have happened — and fails;
// the next call reconnects.
//
// # Servers behind OAuth
//
// A server with auth: oauth ([AuthOAuth]) is reached through an OAuth
// client (mcp/oauth) built by [NewOAuthTransport] over egress: the MCP
// requests through one egress transport, every OAuth leg (metadata,
// registration, token) through another that vets every address and every
// metadata-supplied URL ([egress.Transport.Vet]) before a secret is read;
// each token request is one oauth_token audit row. Tokens and client
// registrations live in the vault ([OAuthVault]), bound to the server's
// host. The runtime's client never asks a user: a server it holds no
// token for fails its calls with [ErrNeedsLogin], a step that says "needs
// `andon auth login NAME`", and [ServerInfo].NeedsLogin. [OAuthLogins]
// and [OAuthLogout] serve `andon auth status` and `logout`.
//
// # Effects
//
// Every imported tool has an effect (agent.Effect), which decides whether
// the runtime fences it and whether a run interrupted during it may be
// retried:
//
//   - An operator's setting made while andon runs ([Catalogue.SetTool],
//     kept in a [SettingsStore]) wins over everything.
//   - Then the operator's classification in [Server].Effects, by the
//     tool's name on the server.
//   - Otherwise a tool is a non-idempotent write: the safest reading of a
//     tool nobody has classified.
//   - Only when the operator has not classified a tool, and the server is
//     marked TrustAnnotations, may the server's annotations suggest a
//     class: readOnlyHint → read_only, else idempotentHint →
//     idempotent_write. Annotations from a server that is not trusted are
//     ignored, and annotations never override the operator: an operator's
//     read_only on a tool the server says writes is kept, with a warning
//     in the log.
//
// # Approval
//
// Calls of a server's tools need an operator's approval unless the server
// says requires_approval: false, or an operator's setting of the tool says
// otherwise. A server that says approval: other_person asks for four eyes
// ([Tool.FourEyes]): the run's owner may not approve its own run's calls;
// an admin may, and that override is audited.
//
// # Operators' settings
//
// An operator may, per tool (its server and its name there), disable it,
// set its effect or say whether its calls need approval
// ([Catalogue.SetTool]); and import a server's tools again
// ([Catalogue.Import]). Settings live in [Options].Settings, a store
// shared by every andon process on the database, and win over andon.yaml
// and annotations. A disabled tool is not listed for the model, and a call
// to it fails, saying so, without reaching the server.
//
// Each process re-reads the settings when a List or Lookup finds them
// older than [Options].SettingsMaxAge (a second by default), so a change
// made by another process applies within that bound, without a restart;
// the process that makes a change applies it at once. A [Tool] handed out
// is a snapshot: a call under way keeps the effect and approval it started
// with, and the next lookup sees the change.
package catalogue
