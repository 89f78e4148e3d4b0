package workflows

import "time"

// DeliverWebhook's activities, by the names workers register them under
// (webhook.NewWorker). The names are in recorded workflow histories: never
// rename them.
const (
	SendWebhookActivity         = "SendWebhook"
	FailWebhookDeliveryActivity = "FailWebhookDelivery"
)

// WebhookTimeout bounds one delivery attempt's wait for the endpoint's
// answer (docs/webhooks.md): a slower answer counts as a failure.
const WebhookTimeout = 10 * time.Second

// WebhookSchedule is the wait between a delivery's attempts as its
// workflow carries it (docs/retries.md, webhook): after failed attempt n,
// min(Base·2^(n−1), Cap) less a uniform share of up to 20 %
// (retry.Webhook's formula); after a 429 or 503 with Retry-After, the wait
// asked for, kept between Base and Cap.
type WebhookSchedule struct {
	Base time.Duration
	Cap  time.Duration
}

// DeliveryRef names one run of one delivery: ids only, never the body or
// the secret.
type DeliveryRef struct {
	DeliveryID string
	Run        int
}
