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
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/webhooksign"
	"github.com/keeperhq/keeper/internal/workflows"
)

// WebhookMaxAnswer is the largest answer a delivery attempt reads (docs/webhooks.md): a larger one counts as a failure, as does one slower than
// workflows.WebhookTimeout.
const WebhookMaxAnswer = 64 << 10

// Deliveries is the store as webhook delivery needs it: a delivery with
// its webhook's URL and secrets, and each attempt's outcome (*store.Store).
type Deliveries interface {
	DeliveryTarget(ctx context.Context, id string) (store.Delivery, store.Target, error)
	RecordDeliveryAttempt(ctx context.Context, id string, run int, a store.Attempt) (disabled bool, err error)
	FailDelivery(ctx context.Context, id string, run int, why string) error
}

// Webhook holds the webhook delivery activities' dependencies.
type Webhook struct {
	Store Deliveries
	// Client posts deliveries. It must follow no redirects and check every
	// connection against the outbound policy (urlpolicy.Policy.Client).
	Client       *http.Client
	DisableAfter time.Duration // failing this long without a success disables the webhook (0: never)
	Timeout      time.Duration // one attempt's limit; 0: WebhookTimeout
	Logger       *slog.Logger
	Metrics      *WebhookMetrics

	// Schedule is the wait between attempts of a delivery whose workflow
	// carries none (started by a keeper older than WebhookSchedule).
	Schedule workflows.WebhookSchedule
}

// SendWebhook makes one attempt of the delivery: it signs the stored body
// with the webhook's secrets (the current one, and during a rotation's
// grace period the one it replaced) and posts it, and records the outcome.
// A 2xx answer within WebhookTimeout and WebhookMaxAnswer is a success. A
// 410 answer disables the webhook and fails the delivery without retry.
// Anything else is an error Temporal retries after the wait sched gives
// (jittered, or the answer's Retry-After on a 429 or 503), handed back as
// NextRetryDelay since Temporal's own retry policy has no jitter. A
// delivery already delivered, failed or re-driven since is left alone.
func (a *Webhook) SendWebhook(ctx context.Context, ref workflows.DeliveryRef, sched workflows.WebhookSchedule) error {
	d, target, err := a.Store.DeliveryTarget(ctx, ref.DeliveryID)
	if err != nil {
		return err
	}
	if d.Run != ref.Run || d.Status != store.DeliveryPending {
		return nil
	}
	if !target.Live {
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" is deleted or disabled", workflows.ErrTypeWebhookGone, nil)
	}
	now := time.Now()
	ans, sendErr := a.post(ctx, target, d, now)
	a.Metrics.attempt(sendErr == nil)
	gone := ans.status == http.StatusGone
	disabled, err := a.Store.RecordDeliveryAttempt(ctx, d.ID, ref.Run, store.Attempt{
		OK: sendErr == nil, Status: ans.status, Error: errText(sendErr), At: now, DisableAfter: a.DisableAfter, Gone: gone,
	})
	if err != nil {
		return err
	}
	switch {
	case disabled && gone:
		a.Metrics.disabled("gone")
		a.Logger.Warn("webhook disabled: its endpoint answered 410 Gone; POST /v1/webhooks/{id}/enable enables it again",
			"webhook", d.SubscriptionID)
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" disabled: "+store.GoneReason, workflows.ErrTypeWebhookGone, nil)
	case disabled:
		a.Metrics.disabled("failing")
		a.Logger.Warn("webhook disabled: its deliveries failed without a success for longer than KEEPER_WEBHOOK_DISABLE_AFTER; POST /v1/webhooks/{id}/enable enables it again",
			"webhook", d.SubscriptionID, "disable_after", a.DisableAfter, "last_error", errText(sendErr))
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" disabled", workflows.ErrTypeWebhookGone, nil)
	case gone:
		// Disabled already, by another delivery's 410.
		return temporal.NewNonRetryableApplicationError("webhook "+d.SubscriptionID+" is deleted or disabled", workflows.ErrTypeWebhookGone, nil)
	case sendErr != nil:
		if sched.Base <= 0 {
			sched = a.Schedule
		}
		s := webhookSchedule(sched)
		wait := s.Within(int(activity.GetInfo(ctx).Attempt))
		if ans.retryAfter >= 0 {
			wait = s.After(ans.retryAfter)
		}
		return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("deliver %s to webhook %s: %v", d.ID, d.SubscriptionID, sendErr),
			workflows.ErrTypeTransient, temporal.ApplicationErrorOptions{NextRetryDelay: wait})
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// answer is what an attempt got back.
type answer struct {
	status int // 0: none
	// retryAfter is the wait a 429 or 503 answer asked for with
	// Retry-After; -1 when it asked for none.
	retryAfter time.Duration
}

// post sends the delivery once. Its errors name neither the URL (which may
// carry a token) nor the answer's body.
func (a *Webhook) post(ctx context.Context, target store.Target, d store.Delivery, at time.Time) (answer, error) {
	none := answer{retryAfter: -1}
	timeout := cmp.Or(a.Timeout, workflows.WebhookTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(d.Body))
	if err != nil {
		return none, errors.New("the webhook's URL does not parse")
	}
	if err := webhooksign.SetHeaders(req.Header, target.Secrets, d.ID, at, d.Body); err != nil {
		return none, err
	}
	req.Header.Set("User-Agent", "keeper-webhooks/1")
	resp, err := a.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() != nil {
			return none, fmt.Errorf("no answer within %s", timeout)
		}
		return none, fmt.Errorf("post failed: %w", err)
	}
	defer resp.Body.Close()
	ans := answer{status: resp.StatusCode, retryAfter: -1}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		ans.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, WebhookMaxAnswer+1))
	switch {
	case ctx.Err() != nil:
		return ans, fmt.Errorf("answer not read within %s", timeout)
	case err != nil:
		return ans, fmt.Errorf("reading the answer failed: %w", err)
	case n > WebhookMaxAnswer:
		return ans, fmt.Errorf("answer larger than %d bytes", WebhookMaxAnswer)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return ans, fmt.Errorf("answered %d; redirects are not followed", resp.StatusCode)
	case ans.retryAfter >= 0:
		return ans, fmt.Errorf("answered %d with Retry-After %s", resp.StatusCode, ans.retryAfter)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return ans, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return ans, nil
}

// parseRetryAfter reads a Retry-After value (RFC 9110, 10.2.3): a number of
// seconds or an HTTP date, a date in the past being no wait. It returns -1
// for an absent or unreadable value.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return time.Duration(min(secs, 1<<32)) * time.Second // ErrRange: secs is the largest uint64
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// FailWebhookDelivery marks run of the delivery failed with why: its
// retries are used up, or its webhook was deleted or disabled. It can be
// re-driven through the API.
func (a *Webhook) FailWebhookDelivery(ctx context.Context, ref workflows.DeliveryRef, why string) error {
	a.Metrics.failed()
	return a.Store.FailDelivery(ctx, ref.DeliveryID, ref.Run, why)
}

// WebhookMetrics count webhook deliveries in the worker process that made
// them. Every method is safe on a nil *WebhookMetrics.
type WebhookMetrics struct {
	Attempts *prometheus.CounterVec // keeper_webhook_attempts_total{outcome="ok"|"error"}
	Failed   prometheus.Counter     // keeper_webhook_deliveries_failed_total
	Disabled *prometheus.CounterVec // keeper_webhooks_disabled_total{reason="failing"|"gone"}
}

// NewWebhookMetrics returns unregistered metrics.
func NewWebhookMetrics() *WebhookMetrics {
	m := &WebhookMetrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keeper_webhook_attempts_total", Help: "Webhook delivery attempts by outcome (ok: a 2xx answer)."}, []string{"outcome"}),
		Failed:   prometheus.NewCounter(prometheus.CounterOpts{Name: "keeper_webhook_deliveries_failed_total", Help: "Webhook deliveries marked failed (retries used up, or the webhook deleted or disabled)."}),
		Disabled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keeper_webhooks_disabled_total", Help: "Webhooks disabled, by reason: failing (for KEEPER_WEBHOOK_DISABLE_AFTER without a success) or gone (the endpoint answered 410)."}, []string{"reason"}),
	}
	m.Attempts.WithLabelValues("ok")
	m.Attempts.WithLabelValues("error")
	m.Disabled.WithLabelValues("failing")
	m.Disabled.WithLabelValues("gone")
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

func (m *WebhookMetrics) disabled(reason string) {
	if m != nil {
		m.Disabled.WithLabelValues(reason).Inc()
	}
}

// webhookSchedule is sched's waits as a retry.Schedule.
func webhookSchedule(sched workflows.WebhookSchedule) retry.Schedule {
	r := retry.Webhook
	r.Base, r.Cap = sched.Base, sched.Cap
	return r
}
