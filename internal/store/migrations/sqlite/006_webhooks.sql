-- Webhooks (docs/webhooks.md): subscriptions, and one delivery row
-- per (event, subscription) written in the transaction of the state
-- change it reports. events is a comma-list with a comma at each end
-- (",evidence.confirmed,epoch.failed,") so one LIKE matches a type.
-- disabled_at 0 means enabled; failing_since 0 means the last delivery
-- succeeded. A delivery's started_at 0 means no workflow delivers it yet.

CREATE TABLE webhook_subscriptions (
	id              TEXT    PRIMARY KEY,
	url             TEXT    NOT NULL,
	events          TEXT    NOT NULL,
	secret          TEXT    NOT NULL,
	disabled_at     INTEGER NOT NULL DEFAULT 0,
	disabled_reason TEXT    NOT NULL DEFAULT '',
	failing_since   INTEGER NOT NULL DEFAULT 0,
	deleted_at      INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);

CREATE TABLE webhook_deliveries (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT    NOT NULL UNIQUE,
	subscription_id TEXT    NOT NULL REFERENCES webhook_subscriptions(id),
	type            TEXT    NOT NULL,
	object_id       TEXT    NOT NULL,
	body            TEXT    NOT NULL,
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	last_status     INTEGER NOT NULL DEFAULT 0,
	run             INTEGER NOT NULL DEFAULT 0,
	started_at      INTEGER NOT NULL DEFAULT 0,
	delivered_at    INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries(started_at, seq);
CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries(subscription_id, seq);
