-- PostgreSQL twin of ../011_approval_identity.sql: the identity of the tool
-- an approval was given for (agent.IdentifiedTool). A call whose tool is no
-- longer that one waits for a new decision, which replaces the stale
-- approval. Empty: a tool that says nothing of itself, or a decision of an
-- earlier version.
ALTER TABLE approvals ADD COLUMN tool_identity text NOT NULL DEFAULT '';
