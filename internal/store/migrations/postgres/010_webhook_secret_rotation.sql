-- Webhook secret rotation with overlap (see sqlite/010_webhook_secret_rotation.sql).

ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_until BIGINT NOT NULL DEFAULT 0;
