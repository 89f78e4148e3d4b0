-- The deployment's trust root (see sqlite/013_trust_root.sql).

CREATE TABLE trust_roots (
	version    BIGINT PRIMARY KEY,
	root       TEXT   NOT NULL,
	note       TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);
