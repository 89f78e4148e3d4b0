-- Write each evidence once (docs/production.md, "Storage and retention"): an evidence's status,
-- attempts and last error are derived on read from its batches instead of
-- being rewritten at every stage, so those columns and the per-anchor
-- state go; audit paths are computed from the batch's leaves when a
-- receipt is read instead of written one UPDATE per evidence. Both
-- tables are rebuilt (SQLite rewrites a table to drop a column anyway):
-- the outbox as a WITHOUT ROWID table keyed by (evidence, chain), one
-- b-tree instead of a table and its primary-key index, and the indexes
-- on idempotency keys and batch membership partial.

CREATE TABLE evidence_v7 (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT    NOT NULL UNIQUE,
	digest          BLOB    NOT NULL,
	chains          TEXT    NOT NULL,
	priority        INTEGER NOT NULL,
	idempotency_key TEXT,
	metadata        TEXT,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	salt            BLOB
);
INSERT INTO evidence_v7 (seq, id, digest, chains, priority, idempotency_key, metadata, created_at, updated_at, salt)
	SELECT seq, id, digest, chains, priority, idempotency_key, metadata, created_at, updated_at, salt FROM evidence;

CREATE TABLE outbox_v7 (
	evidence_seq INTEGER NOT NULL REFERENCES evidence_v7(seq),
	chain        TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	batch_id     INTEGER REFERENCES batches(id),
	leaf_index   INTEGER,
	PRIMARY KEY (evidence_seq, chain)
) WITHOUT ROWID;
INSERT INTO outbox_v7 (evidence_seq, chain, priority, batch_id, leaf_index)
	SELECT evidence_seq, chain, priority, batch_id, leaf_index FROM outbox;

-- The old tables go, children first; renaming evidence_v7 rewrites
-- outbox_v7's reference to it.
DROP TABLE outbox;
DROP TABLE evidence;
ALTER TABLE evidence_v7 RENAME TO evidence;
ALTER TABLE outbox_v7 RENAME TO outbox;
-- Keys and batch membership are indexed only where they exist: most
-- evidence comes without a key, and a pending anchor has no batch yet.
CREATE UNIQUE INDEX evidence_by_key ON evidence(idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX outbox_pending ON outbox(chain, priority, evidence_seq) WHERE batch_id IS NULL;
CREATE INDEX outbox_by_batch ON outbox(batch_id, leaf_index) WHERE batch_id IS NOT NULL;
