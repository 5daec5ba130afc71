-- What an approval approved, beyond the call's name: the identity of the
-- tool it was given for (agent.IdentifiedTool: for an MCP tool, a digest
-- of its server's definition and of the tool's schema). A call whose tool
-- is no longer that one waits for a new decision, which replaces the stale
-- approval (one decision per call still). Empty: a tool that says nothing
-- of itself, or a decision of an earlier version, which no identified
-- tool matches.
ALTER TABLE approvals ADD COLUMN tool_identity TEXT NOT NULL DEFAULT '';
