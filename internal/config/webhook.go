package config

import (
	"time"

	"github.com/keeperhq/keeper/internal/urlpolicy"
)

// WebhookConfig is the webhook delivery schedule (docs/webhooks.md).
type WebhookConfig struct {
	RetryWindow   time.Duration // attempts stop, and the delivery is failed, after this long
	RetryBase     time.Duration // first wait between attempts; doubles each time
	RetryCap      time.Duration // longest wait between attempts
	Timeout       time.Duration // one attempt's limit
	DisableAfter  time.Duration // failing this long without a success disables the webhook (0: never)
	RotationGrace time.Duration // how long a rotated-out secret keeps signing (0: not at all)
}

// MaxRotationGrace is the longest a rotated-out webhook secret may keep
// signing: an old secret is meant to bridge a redeploy, not to live on.
const MaxRotationGrace = 7 * 24 * time.Hour

// Outbound is the policy for URLs callers hand keeper.
func (c *Config) Outbound() urlpolicy.Policy {
	return urlpolicy.Policy{AllowPrivate: c.AllowPrivateURLs}
}

// webhookKnobs are the settings of webhook delivery, and of the URLs
// callers hand keeper.
func (c *Config) webhookKnobs() []Knob {
	return []Knob{
		{"webhook-allow-private", "KEEPER_WEBHOOK_ALLOW_PRIVATE", "false", Node,
			"let URLs a caller hands keeper (an epoch's source; webhook endpoints) be http:// and reach " +
				"loopback, private and link-local addresses; otherwise only https:// to public addresses, " +
				"checked again at connect time after DNS, with no redirects followed. `keeper dev` sets it " +
				"unless given",
			&c.AllowPrivateURLs},
		{"webhook-retry-window", "KEEPER_WEBHOOK_RETRY_WINDOW", "72h", Node,
			"how long a webhook delivery is retried before it is marked failed (re-drivable with POST " +
				"/v1/webhooks/{id}/deliveries/{delivery_id}/retry)",
			&c.Webhook.RetryWindow},
		{"webhook-retry-base", "KEEPER_WEBHOOK_RETRY_BASE", "5s", Node,
			"wait before a failed webhook delivery's second attempt; each later wait doubles, up to " +
				"KEEPER_WEBHOOK_RETRY_CAP, less up to 20 % jitter; also the shortest wait a receiver's " +
				"Retry-After can ask for",
			&c.Webhook.RetryBase},
		{"webhook-retry-cap", "KEEPER_WEBHOOK_RETRY_CAP", "1h", Node,
			"longest wait between two attempts of a webhook delivery, a receiver's Retry-After included",
			&c.Webhook.RetryCap},
		{"webhook-timeout", "KEEPER_WEBHOOK_TIMEOUT", "10s", Node,
			"a webhook endpoint that has not answered within this long has failed the attempt",
			&c.Webhook.Timeout},
		{"webhook-disable-after", "KEEPER_WEBHOOK_DISABLE_AFTER", "72h", Worker,
			"a webhook whose deliveries have failed for this long without a success is disabled (logged, " +
				"counted in keeper_webhooks_disabled_total); POST /v1/webhooks/{id}/enable, or re-driving one " +
				"of its deliveries, enables it again (0 = never)",
			&c.Webhook.DisableAfter},
		{"webhook-rotation-grace", "KEEPER_WEBHOOK_ROTATION_GRACE", "24h", API,
			"after POST /v1/webhooks/{id}/rotate-secret, how long the replaced secret keeps signing " +
				"deliveries beside the new one (a request's `grace` overrides it); at most 168h, 0 = replace " + "at once",
			&c.Webhook.RotationGrace},
	}
}
