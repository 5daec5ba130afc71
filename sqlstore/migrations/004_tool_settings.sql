-- Operators' settings of imported tools (catalogue.SettingsStore), one row
-- per tool: its server's name and its name on that server. NULL means not
-- set: andon.yaml (or the default) decides. Every andon process on the
-- database applies them.
CREATE TABLE tool_settings (
	server            TEXT    NOT NULL,
	tool              TEXT    NOT NULL,
	enabled           INTEGER CHECK (enabled IN (0, 1)),
	effect            TEXT    CHECK (effect IN ('read_only', 'idempotent_write', 'non_idempotent_write')),
	requires_approval INTEGER CHECK (requires_approval IN (0, 1)),
	updated_by        TEXT    NOT NULL, -- who changed the row last
	updated_at        INTEGER NOT NULL, -- when: Unix nanoseconds
	PRIMARY KEY (server, tool)
) STRICT;
