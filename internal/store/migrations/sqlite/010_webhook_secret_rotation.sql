-- Webhook secret rotation with overlap (docs/webhooks.md). After
-- a rotation the secret it replaced keeps signing beside the new one
-- until previous_secret_until (unix ms; 0 and '' once it has passed or
-- without a grace period).

ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_until INTEGER NOT NULL DEFAULT 0;
