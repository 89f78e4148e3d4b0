-- Retention (see sqlite/008_retention.sql).

ALTER TABLE batches ADD COLUMN leaves BYTEA;

CREATE TABLE archives (
	id         BIGSERIAL PRIMARY KEY,
	file       TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	created_at BIGINT  NOT NULL
);

CREATE TABLE archived_evidence (
	id         TEXT   PRIMARY KEY,
	archive_id BIGINT NOT NULL REFERENCES archives(id)
);
