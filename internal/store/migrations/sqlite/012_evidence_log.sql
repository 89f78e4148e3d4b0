-- The evidence log (docs/log.md): one entry per evidence,
-- SHA-256(salt ‖ digest), at an index assigned once and gap-free in
-- intake order; the tree's stored hashes, numbered as
-- golang.org/x/mod/sumdb/tlog numbers them; every signed checkpoint;
-- the log's state (its size, the last evidence taken in, the key that
-- signs it). A batch records the checkpoint its anchor commits to and
-- the account that sent it.

CREATE TABLE log_entries (
	idx          INTEGER PRIMARY KEY,
	evidence_seq INTEGER NOT NULL UNIQUE,
	entry        BLOB    NOT NULL
);
CREATE TABLE log_hashes (
	id   INTEGER PRIMARY KEY,
	hash BLOB    NOT NULL
);
CREATE TABLE log_checkpoints (
	size       INTEGER PRIMARY KEY,
	root       BLOB    NOT NULL,
	note       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE log_state (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	size INTEGER NOT NULL,
	seq  INTEGER NOT NULL,
	vkey TEXT    NOT NULL DEFAULT ''
);
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);
ALTER TABLE batches ADD COLUMN log_size INTEGER;
ALTER TABLE batches ADD COLUMN account TEXT NOT NULL DEFAULT '';
