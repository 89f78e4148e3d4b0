-- The evidence log (see sqlite/012_evidence_log.sql).

CREATE TABLE log_entries (
	idx          BIGINT PRIMARY KEY,
	evidence_seq BIGINT NOT NULL UNIQUE,
	entry        BYTEA  NOT NULL
);
CREATE TABLE log_hashes (
	id   BIGINT PRIMARY KEY,
	hash BYTEA  NOT NULL
);
CREATE TABLE log_checkpoints (
	size       BIGINT PRIMARY KEY,
	root       BYTEA  NOT NULL,
	note       TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE TABLE log_state (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	size BIGINT  NOT NULL,
	seq  BIGINT  NOT NULL,
	vkey TEXT    NOT NULL DEFAULT ''
);
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);
ALTER TABLE batches ADD COLUMN log_size BIGINT, ADD COLUMN account TEXT NOT NULL DEFAULT '';
