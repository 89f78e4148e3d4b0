-- Evidence, its per-chain outbox rows, batches and their transactions.

CREATE TABLE evidence (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT    NOT NULL UNIQUE,
	digest          BLOB    NOT NULL,
	chains          TEXT    NOT NULL,
	priority        INTEGER NOT NULL,
	idempotency_key TEXT    UNIQUE,
	metadata        TEXT,
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX evidence_by_status ON evidence(status, seq);

-- The outbox: one row per (evidence, chain), written in the intake transaction.
-- batch_id NULL means the row still waits for the dispatcher.
CREATE TABLE outbox (
	evidence_seq INTEGER NOT NULL REFERENCES evidence(seq),
	chain        TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	state        TEXT    NOT NULL,
	batch_id     INTEGER REFERENCES batches(id),
	leaf_index   INTEGER,
	path         BLOB,
	PRIMARY KEY (evidence_seq, chain)
);
CREATE INDEX outbox_pending ON outbox(chain, priority, evidence_seq) WHERE batch_id IS NULL;
CREATE INDEX outbox_by_batch ON outbox(batch_id, leaf_index);

CREATE TABLE batches (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	chain      TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	priority   INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	root       BLOB,
	tx_ref     TEXT,
	block      INTEGER,
	block_time INTEGER,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX batches_by_state ON batches(state, chain);

-- Every transaction an adapter signed for a batch, saved before broadcast.
CREATE TABLE tx_refs (
	batch_id   INTEGER NOT NULL REFERENCES batches(id),
	seq        INTEGER NOT NULL,
	chain      TEXT    NOT NULL,
	ref        TEXT    NOT NULL,
	raw        BLOB,
	meta       TEXT,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (batch_id, seq)
);
