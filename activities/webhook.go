package activities

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/store"
	"github.com/keeperhq/keeper/webhook"
)

// Limits of one webhook delivery attempt (README, "Webhooks"): an answer
// slower or larger than these counts as a failure.
const (
	WebhookTimeout   = 10 * time.Second
	WebhookMaxAnswer = 64 << 10
)

// ErrTypeWebhookGone is a delivery whose webhook was deleted or disabled:
// no attempt is made, and the delivery fails at once.
const ErrTypeWebhookGone = "WebhookGone"

// Webhook holds the webhook delivery activities' dependencies.
type Webhook struct {
	Store *store.Store
	// Client posts deliveries. It must follow no redirects and check every
	// connection against the outbound policy (outbound.Policy.Client).
	Client       *http.Client
	DisableAfter time.Duration // failing this long without a success disables the webhook (0: never)
	Timeout      time.Duration // one attempt's limit; 0: WebhookTimeout
	Logger       *slog.Logger
	Metrics      *WebhookMetrics
}

// DeliveryRef names one run of one delivery: ids only, never the body or
// the secret.
type DeliveryRef struct {
	DeliveryID string
	Run        int
}

// SendWebhook makes one attempt of the delivery: it signs the stored body
// with the webhook's current secret and posts it, and records the outcome.
// A 2xx answer within WebhookTimeout and WebhookMaxAnswer is a success;
// anything else is an error Temporal retries on the workflow's schedule. A
// delivery already delivered, failed or re-driven since is left alone.
func (a *Webhook) SendWebhook(ctx context.Context, ref DeliveryRef) error {
	d, target, err := a.Store.DeliveryTarget(ctx, ref.DeliveryID)
	if err != nil {
		return err
	}
	if d.Run != ref.Run || d.Status != store.DeliveryPending {
		return nil
	}
	if !target.Live {
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" is deleted or disabled", ErrTypeWebhookGone, nil)
	}
	now := time.Now()
	status, sendErr := a.post(ctx, target, d, now)
	a.Metrics.attempt(sendErr == nil)
	disabled, err := a.Store.RecordDeliveryAttempt(ctx, d.ID, ref.Run, store.Attempt{
		OK: sendErr == nil, Status: status, Error: errText(sendErr), At: now, DisableAfter: a.DisableAfter,
	})
	if err != nil {
		return err
	}
	if disabled {
		a.Metrics.disabled()
		a.Logger.Warn("webhook disabled: its deliveries failed without a success for longer than KEEPER_WEBHOOK_DISABLE_AFTER; re-drive a delivery to enable it again",
			"webhook", d.SubscriptionID, "disable_after", a.DisableAfter, "last_error", errText(sendErr))
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" disabled", ErrTypeWebhookGone, nil)
	}
	if sendErr != nil {
		return fmt.Errorf("deliver %s to webhook %s: %w", d.ID, d.SubscriptionID, sendErr)
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// post sends the delivery once and returns the answer's status (0: none).
// Its errors name neither the URL (which may carry a token) nor the
// answer's body.
func (a *Webhook) post(ctx context.Context, target store.Target, d store.Delivery, at time.Time) (int, error) {
	timeout := cmp.Or(a.Timeout, WebhookTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, errors.New("the webhook's URL does not parse")
	}
	if err := webhook.SetHeaders(req.Header, target.Secret, d.ID, at, d.Body); err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "keeper-webhooks/1")
	resp, err := a.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no answer within %s", timeout)
		}
		return 0, fmt.Errorf("post failed: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, WebhookMaxAnswer+1))
	switch {
	case ctx.Err() != nil:
		return resp.StatusCode, fmt.Errorf("answer not read within %s", timeout)
	case err != nil:
		return resp.StatusCode, fmt.Errorf("reading the answer failed: %w", err)
	case n > WebhookMaxAnswer:
		return resp.StatusCode, fmt.Errorf("answer larger than %d bytes", WebhookMaxAnswer)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, fmt.Errorf("answered %d; redirects are not followed", resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return resp.StatusCode, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// FailWebhookDelivery marks run of the delivery failed with why: its
// retries are used up, or its webhook was deleted or disabled. It can be
// re-driven through the API.
func (a *Webhook) FailWebhookDelivery(ctx context.Context, ref DeliveryRef, why string) error {
	a.Metrics.failed()
	return a.Store.FailDelivery(ctx, ref.DeliveryID, ref.Run, why)
}

// WebhookMetrics count webhook deliveries in the worker process that made
// them. Every method is safe on a nil *WebhookMetrics.
type WebhookMetrics struct {
	Attempts *prometheus.CounterVec // keeper_webhook_attempts_total{outcome="ok"|"error"}
	Failed   prometheus.Counter     // keeper_webhook_deliveries_failed_total
	Disabled prometheus.Counter     // keeper_webhooks_disabled_total
}

// NewWebhookMetrics returns unregistered metrics.
func NewWebhookMetrics() *WebhookMetrics {
	m := &WebhookMetrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keeper_webhook_attempts_total", Help: "Webhook delivery attempts by outcome (ok: a 2xx answer)."}, []string{"outcome"}),
		Failed:   prometheus.NewCounter(prometheus.CounterOpts{Name: "keeper_webhook_deliveries_failed_total", Help: "Webhook deliveries marked failed (retries used up, or the webhook deleted or disabled)."}),
		Disabled: prometheus.NewCounter(prometheus.CounterOpts{Name: "keeper_webhooks_disabled_total", Help: "Webhooks disabled after failing for KEEPER_WEBHOOK_DISABLE_AFTER without a success."}),
	}
	m.Attempts.WithLabelValues("ok")
	m.Attempts.WithLabelValues("error")
	return m
}

// Collectors are the metrics to register.
func (m *WebhookMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Attempts, m.Failed, m.Disabled}
}

func (m *WebhookMetrics) attempt(ok bool) {
	if m == nil {
		return
	}
	outcome := "error"
	if ok {
		outcome = "ok"
	}
	m.Attempts.WithLabelValues(outcome).Inc()
}

func (m *WebhookMetrics) failed() {
	if m != nil {
		m.Failed.Inc()
	}
}

func (m *WebhookMetrics) disabled() {
	if m != nil {
		m.Disabled.Inc()
	}
}
