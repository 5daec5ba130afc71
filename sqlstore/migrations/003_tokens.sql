-- API tokens (api.TokenStore). Only the SHA-256 of a token's secret is
-- kept. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE api_tokens (
	id           TEXT    PRIMARY KEY,
	name         TEXT    NOT NULL, -- the identity its requests act as
	role         TEXT    NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
	hash         BLOB    NOT NULL UNIQUE,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER NOT NULL, -- 0: never used
	revoked_at   INTEGER NOT NULL  -- 0: valid
) STRICT;
