-- Finality waits (docs/anchoring.md).

CREATE TABLE confirm_waits (
	batch_id    BIGINT  PRIMARY KEY REFERENCES batches(id),
	chain       TEXT    NOT NULL,
	ticket      TEXT    NOT NULL,
	task_token  BYTEA,
	workflow_id TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	activity_id TEXT    NOT NULL,
	attempt     INTEGER NOT NULL,
	owner       TEXT    NOT NULL,
	lease_until BIGINT  NOT NULL,
	created_at  BIGINT  NOT NULL
);
CREATE INDEX confirm_waits_by_owner ON confirm_waits(owner);
CREATE INDEX confirm_waits_by_lease ON confirm_waits(chain, lease_until);
