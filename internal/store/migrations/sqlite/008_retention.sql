-- Retention (docs/production.md, "Storage and retention"): confirmed evidence
-- older than KEEPER_EVIDENCE_RETENTION moves to the receipts archive
-- (files of one JSON receipt per line) and its rows go. archives lists
-- those files; archived_evidence says which file holds an evidence's
-- receipt, so a read of it answers 410 naming the file. A batch that
-- loses some of its evidence keeps its leaf hashes in leaves, so the
-- audit paths of the evidence it still holds can be computed.

ALTER TABLE batches ADD COLUMN leaves BLOB;

CREATE TABLE archives (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	file       TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	created_at INTEGER NOT NULL
);

CREATE TABLE archived_evidence (
	id         TEXT    PRIMARY KEY,
	archive_id INTEGER NOT NULL REFERENCES archives(id)
) WITHOUT ROWID;
