-- PostgreSQL twin of ../004_tool_settings.sql: operators' settings of
-- imported tools (catalogue.SettingsStore), one row per tool: its server's
-- name and its name on that server. NULL means not set: andon.yaml (or the
-- default) decides. Every andon process on the database applies them.
CREATE TABLE tool_settings (
	server            text    NOT NULL,
	tool              text    NOT NULL,
	enabled           boolean,
	effect            text    CHECK (effect IN ('read_only', 'idempotent_write', 'non_idempotent_write')),
	requires_approval boolean,
	updated_by        text    NOT NULL, -- who changed the row last
	updated_at        bigint  NOT NULL, -- when: Unix nanoseconds
	PRIMARY KEY (server, tool)
);
