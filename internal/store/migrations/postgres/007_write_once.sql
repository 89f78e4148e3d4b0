-- Write each evidence once (see sqlite/007_write_once.sql).

DROP INDEX evidence_by_status;
ALTER TABLE evidence DROP COLUMN status, DROP COLUMN attempts, DROP COLUMN last_error;
ALTER TABLE outbox DROP COLUMN state, DROP COLUMN path;
