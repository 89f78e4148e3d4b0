-- Witnesses' cosignatures of the log's checkpoints (c2sp.org/tlog-witness,
-- docs/log.md, Witnesses). log_cosignatures keeps each witness's
-- cosignature line of a checkpoint as it came; log_checkpoints.cosigned
-- holds the lines that make the quorum once it is reached, so the newest
-- witnessed checkpoint (what /log/checkpoint serves and receipts name) is
-- one indexed read. log_witnesses is the size each witness cosigned last,
-- or said it holds (a 409), where the next request's proof starts.

CREATE TABLE log_cosignatures (
	size       INTEGER NOT NULL,
	witness    TEXT    NOT NULL,
	line       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (size, witness)
);

CREATE TABLE log_witnesses (
	witness    TEXT    PRIMARY KEY,
	size       INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);

ALTER TABLE log_checkpoints ADD COLUMN cosigned TEXT NOT NULL DEFAULT '';
ALTER TABLE log_checkpoints ADD COLUMN witnessed_at INTEGER NOT NULL DEFAULT 0;

CREATE INDEX log_checkpoints_witnessed ON log_checkpoints (size) WHERE cosigned <> '';
