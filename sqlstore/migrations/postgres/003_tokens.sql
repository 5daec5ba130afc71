-- PostgreSQL twin of ../003_tokens.sql: API tokens (api.TokenStore). Only
-- the SHA-256 of a token's secret is kept. Times are Unix nanoseconds, 0
-- when unset.
CREATE TABLE api_tokens (
	id           text   PRIMARY KEY,
	name         text   NOT NULL, -- the identity its requests act as
	role         text   NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
	hash         bytea  NOT NULL UNIQUE,
	created_at   bigint NOT NULL,
	last_used_at bigint NOT NULL, -- 0: never used
	revoked_at   bigint NOT NULL  -- 0: valid
);
