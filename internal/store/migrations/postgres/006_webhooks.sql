-- Webhooks (subscriptions and their deliveries).

CREATE TABLE webhook_subscriptions (
	id              TEXT    PRIMARY KEY,
	url             TEXT    NOT NULL,
	events          TEXT    NOT NULL,
	secret          TEXT    NOT NULL,
	disabled_at     BIGINT  NOT NULL DEFAULT 0,
	disabled_reason TEXT    NOT NULL DEFAULT '',
	failing_since   BIGINT  NOT NULL DEFAULT 0,
	deleted_at      BIGINT  NOT NULL DEFAULT 0,
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL
);

CREATE TABLE webhook_deliveries (
	seq             BIGSERIAL PRIMARY KEY,
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
	started_at      BIGINT  NOT NULL DEFAULT 0,
	delivered_at    BIGINT  NOT NULL DEFAULT 0,
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL
);
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries(started_at, seq);
CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries(subscription_id, seq);
