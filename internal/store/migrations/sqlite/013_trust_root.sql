-- The deployment's trust root (docs/log.md, Trust): every version of it,
-- each one extending the one before (evlog/trust.Extends), as JSON and as
-- the note the log's key signed. Rows are only ever added.

CREATE TABLE trust_roots (
	version    INTEGER PRIMARY KEY,
	root       TEXT    NOT NULL,
	note       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
