-- Finality waits (docs/anchoring.md, "Waiting for finality"): one row
-- per batch whose ConfirmAnchor attempt a worker's finality watcher will
-- complete. ticket names the registration (a retried attempt replaces
-- the row); task_token is NULL for an attempt found orphaned after a
-- crash, which is completed by workflow, run and activity id instead.
-- owner is the watching worker process; another adopts the row once
-- lease_until has passed.

CREATE TABLE confirm_waits (
	batch_id    INTEGER PRIMARY KEY REFERENCES batches(id),
	chain       TEXT    NOT NULL,
	ticket      TEXT    NOT NULL,
	task_token  BLOB,
	workflow_id TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	activity_id TEXT    NOT NULL,
	attempt     INTEGER NOT NULL,
	owner       TEXT    NOT NULL,
	lease_until INTEGER NOT NULL,
	created_at  INTEGER NOT NULL
);
CREATE INDEX confirm_waits_by_owner ON confirm_waits(owner);
CREATE INDEX confirm_waits_by_lease ON confirm_waits(chain, lease_until);
