-- Batches name their evidence by range (see sqlite/015_batch_spans.sql).

CREATE TABLE batch_spans (
	batch_id   BIGINT  NOT NULL REFERENCES batches(id),
	chain      TEXT    NOT NULL,
	priority   INTEGER NOT NULL,
	after_seq  BIGINT  NOT NULL,
	upto_seq   BIGINT  NOT NULL,
	first_leaf INTEGER NOT NULL,
	size       INTEGER NOT NULL,
	PRIMARY KEY (batch_id, priority)
);

CREATE UNIQUE INDEX batch_spans_by_lane ON batch_spans(chain, priority, upto_seq);
