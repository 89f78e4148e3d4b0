package api

import "time"

// WebhookList is the answer of GET /v1/webhooks (without secrets).
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// DeliveryList is the answer of GET /v1/webhooks/{id}/deliveries, newest
// first.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
}

// Webhook is a subscription as the API shows it. Secret is set only in the
// answers of POST /v1/webhooks and of rotate-secret.
type Webhook struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Secret         string    `json:"secret,omitempty"`
	Enabled        bool      `json:"enabled"`
	DisabledAt     time.Time `json:"disabled_at,omitzero"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	FailingSince   time.Time `json:"failing_since,omitzero"`
	CreatedAt      time.Time `json:"created_at"`
	// PreviousSecretExpiresAt is when the secret replaced by the last
	// rotation stops signing beside the current one (zero: none does).
	PreviousSecretExpiresAt time.Time `json:"previous_secret_expires_at,omitzero"`
}

// WebhookRequest is the body of POST /v1/webhooks: it subscribes URL to
// events (evidence.confirmed, …).
type WebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// WebhookRotation is the body of POST /v1/webhooks/{id}/rotate-secret:
// Grace is how long the replaced secret keeps signing beside the new one, a
// duration such as "1h" ("0s": it stops at once; at most "168h"). Without
// a body, or without grace, the server's KEEPER_WEBHOOK_ROTATION_GRACE.
type WebhookRotation struct {
	Grace string `json:"grace"`
}

// Delivery is one event's delivery to one webhook.
type Delivery struct {
	ID          string    `json:"id"` // the webhook-id header: the same on every attempt
	Type        string    `json:"type"`
	ObjectID    string    `json:"object_id"`
	Status      string    `json:"status"` // pending, delivered or failed
	Attempts    int       `json:"attempts"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
}
