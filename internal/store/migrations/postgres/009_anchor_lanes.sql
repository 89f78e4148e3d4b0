-- Intake writes the evidence row alone (see sqlite/009_anchor_lanes.sql).

CREATE INDEX evidence_by_lane ON evidence(priority, seq);

CREATE TABLE anchor_start (seq BIGINT NOT NULL);
INSERT INTO anchor_start (seq) SELECT COALESCE(MAX(seq), 0) FROM evidence;

CREATE TABLE anchor_cursors (
	chain    TEXT    NOT NULL,
	priority INTEGER NOT NULL,
	seq      BIGINT  NOT NULL,
	PRIMARY KEY (chain, priority)
);
