-- Witnesses' cosignatures of the log's checkpoints (see sqlite/014_witnesses.sql).

CREATE TABLE log_cosignatures (
	size       BIGINT NOT NULL,
	witness    TEXT   NOT NULL,
	line       TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (size, witness)
);

CREATE TABLE log_witnesses (
	witness    TEXT   PRIMARY KEY,
	size       BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

ALTER TABLE log_checkpoints ADD COLUMN cosigned TEXT NOT NULL DEFAULT '';
ALTER TABLE log_checkpoints ADD COLUMN witnessed_at BIGINT NOT NULL DEFAULT 0;

CREATE INDEX log_checkpoints_witnessed ON log_checkpoints (size) WHERE cosigned <> '';
