-- A batch formed from the lanes names its evidence by range instead of
-- writing an outbox row per evidence: a span per lane it took from. The
-- span holds, as leaves first_leaf onward, the lane's evidence (chain,
-- priority) taken in after after_seq up to upto_seq, in intake order,
-- less any with an outbox row on the chain (written by a keeper from
-- before migration 9). Outbox rows stay for what must move alone: a
-- re-driven anchor (a dead-lettered span's members get their rows, same
-- batch and leaf, and the span goes) and the batches formed from them.
-- Batches formed before this migration keep their outbox rows.

CREATE TABLE batch_spans (
	batch_id   INTEGER NOT NULL REFERENCES batches(id),
	chain      TEXT    NOT NULL,
	priority   INTEGER NOT NULL,
	after_seq  INTEGER NOT NULL,
	upto_seq   INTEGER NOT NULL,
	first_leaf INTEGER NOT NULL,
	size       INTEGER NOT NULL,
	PRIMARY KEY (batch_id, priority)
) WITHOUT ROWID;

-- An evidence's span on a lane: the first whose upto_seq reaches it.
CREATE UNIQUE INDEX batch_spans_by_lane ON batch_spans(chain, priority, upto_seq);
