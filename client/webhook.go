package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/api"
)

func webhookPath(id string) string { return "/v1/webhooks/" + url.PathEscape(id) }

// CreateWebhook subscribes a URL (POST /v1/webhooks); the answer carries
// the secret deliveries are signed with, this once.
func (cl *Client) CreateWebhook(ctx context.Context, r WebhookRequest) (*Webhook, error) {
	wh, _, err := send[Webhook](ctx, cl, call{method: http.MethodPost, path: "/v1/webhooks", body: r})
	return wh, err
}

// Webhooks lists the subscriptions (GET /v1/webhooks), without secrets.
func (cl *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	page, _, err := send[api.WebhookList](ctx, cl, call{method: http.MethodGet, path: "/v1/webhooks"})
	if err != nil {
		return nil, err
	}
	return page.Webhooks, nil
}

// Webhook answers one subscription (GET /v1/webhooks/{id}).
func (cl *Client) Webhook(ctx context.Context, id string) (*Webhook, error) {
	wh, _, err := send[Webhook](ctx, cl, call{method: http.MethodGet, path: webhookPath(id)})
	return wh, err
}

// DeleteWebhook ends a subscription (DELETE /v1/webhooks/{id}).
func (cl *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := cl.do(ctx, call{method: http.MethodDelete, path: webhookPath(id)})
	return err
}

// RotateWebhookSecret gives the subscription a new secret (POST
// /v1/webhooks/{id}/rotate-secret), in the answer this once. The old secret
// keeps signing beside it for the server's default grace period
// (KEEPER_WEBHOOK_ROTATION_GRACE); RotateWebhookSecretWithGrace names
// another.
func (cl *Client) RotateWebhookSecret(ctx context.Context, id string) (*Webhook, error) {
	wh, _, err := send[Webhook](ctx, cl, call{method: http.MethodPost, path: webhookPath(id) + "/rotate-secret"})
	return wh, err
}

// RotateWebhookSecretWithGrace is RotateWebhookSecret with the old secret
// signing beside the new one for grace (0: not at all), so receivers
// verify with either while they are redeployed.
func (cl *Client) RotateWebhookSecretWithGrace(ctx context.Context, id string, grace time.Duration) (*Webhook, error) {
	wh, _, err := send[Webhook](ctx, cl, call{method: http.MethodPost, path: webhookPath(id) + "/rotate-secret", body: WebhookRotation{Grace: grace.String()}})
	return wh, err
}

// EnableWebhook enables a subscription disabled by failures or by its
// endpoint's 410 answer (POST /v1/webhooks/{id}/enable); its failed
// deliveries stay failed until re-driven with RetryDelivery.
func (cl *Client) EnableWebhook(ctx context.Context, id string) (*Webhook, error) {
	wh, _, err := send[Webhook](ctx, cl, call{method: http.MethodPost, path: webhookPath(id) + "/enable"})
	return wh, err
}

// Deliveries lists a subscription's deliveries, newest first (GET
// /v1/webhooks/{id}/deliveries); limit 0 is the API's default.
func (cl *Client) Deliveries(ctx context.Context, id string, limit int) ([]Delivery, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	page, _, err := send[api.DeliveryList](ctx, cl, call{method: http.MethodGet, path: webhookPath(id) + "/deliveries", query: q})
	if err != nil {
		return nil, err
	}
	return page.Deliveries, nil
}

// RetryDelivery sends a failed delivery again, same id and body (POST
// /v1/webhooks/{id}/deliveries/{delivery_id}/retry); otherwise an *Error
// with code not_failed.
func (cl *Client) RetryDelivery(ctx context.Context, id, deliveryID string) (*Delivery, error) {
	d, _, err := send[Delivery](ctx, cl, call{method: http.MethodPost, path: webhookPath(id) + "/deliveries/" + url.PathEscape(deliveryID) + "/retry"})
	return d, err
}
