-- Intake writes the evidence row alone (docs/production.md, "Storage and retention"). An
-- anchor's outbox row is written when a batch takes it, so a pending
-- anchor is one without a row: evidence of a lane (chain, priority)
-- taken in after the lane's cursor. Forming a batch inserts the rows
-- of the evidence it takes, in intake order from the cursor, and moves
-- the cursor. Evidence taken in before this migration has its rows
-- already (anchor_start); a retried anchor's row goes back to batch_id
-- NULL and is taken before the lane.

CREATE INDEX evidence_by_lane ON evidence(priority, seq);

CREATE TABLE anchor_start (seq INTEGER NOT NULL);
INSERT INTO anchor_start (seq) SELECT COALESCE(MAX(seq), 0) FROM evidence;

CREATE TABLE anchor_cursors (
	chain    TEXT    NOT NULL,
	priority INTEGER NOT NULL,
	seq      INTEGER NOT NULL,
	PRIMARY KEY (chain, priority)
) WITHOUT ROWID;
