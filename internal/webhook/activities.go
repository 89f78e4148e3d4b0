package webhook

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

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/webhooksign"
	"github.com/keeperhq/keeper/internal/workflows"
)

// MaxAnswer is the largest answer a delivery attempt reads
// (docs/webhooks.md): a larger one counts as a failure, as does one slower
// than workflows.WebhookTimeout.
const MaxAnswer = 64 << 10

// Deliveries is the store as webhook delivery needs it: a delivery with
// its webhook's URL and secrets, and each attempt's outcome (*store.Store).
type Deliveries interface {
	DeliveryTarget(ctx context.Context, id string) (store.Delivery, store.Target, error)
	RecordDeliveryAttempt(ctx context.Context, id string, run int, a store.Attempt) (disabled bool, err error)
	FailDelivery(ctx context.Context, id string, run int, why string) error
}

// Activities are DeliverWebhook's activities, with their dependencies.
type Activities struct {
	Store Deliveries
	// Client posts deliveries. It must follow no redirects and check every
	// connection against the outbound policy (urlpolicy.Policy.Client).
	Client       *http.Client
	DisableAfter time.Duration // failing this long without a success disables the webhook (0: never)
	Timeout      time.Duration // one attempt's limit; 0: workflows.WebhookTimeout
	Logger       *slog.Logger
	Metrics      *Metrics

	// Schedule is the wait between attempts of a delivery whose workflow
	// carries none (started by a keeper older than workflows.WebhookSchedule).
	Schedule workflows.WebhookSchedule
}

// byName are the activities by the names DeliverWebhook calls them
// (workflows.*Activity): each method under its own name, the name
// registering the struct gave it before workflows called them by name, and
// that recorded histories hold.
func (a *Activities) byName() map[string]any {
	return map[string]any{
		workflows.SendWebhookActivity:         a.SendWebhook,
		workflows.FailWebhookDeliveryActivity: a.FailWebhookDelivery,
	}
}

// SendWebhook makes one attempt of the delivery: it signs the stored body
// with the webhook's secrets (the current one, and during a rotation's
// grace period the one it replaced) and posts it, and records the outcome.
// A 2xx answer within Timeout and MaxAnswer is a success. A
// 410 answer disables the webhook and fails the delivery without retry.
// Anything else is an error Temporal retries after the wait sched gives
// (jittered, or the answer's Retry-After on a 429 or 503), handed back as
// NextRetryDelay since Temporal's own retry policy has no jitter. A
// delivery already delivered, failed or re-driven since is left alone.
func (a *Activities) SendWebhook(ctx context.Context, ref workflows.DeliveryRef, sched workflows.WebhookSchedule) error {
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
func (a *Activities) post(ctx context.Context, target store.Target, d store.Delivery, at time.Time) (answer, error) {
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
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswer+1))
	switch {
	case ctx.Err() != nil:
		return ans, fmt.Errorf("answer not read within %s", timeout)
	case err != nil:
		return ans, fmt.Errorf("reading the answer failed: %w", err)
	case n > MaxAnswer:
		return ans, fmt.Errorf("answer larger than %d bytes", MaxAnswer)
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
func (a *Activities) FailWebhookDelivery(ctx context.Context, ref workflows.DeliveryRef, why string) error {
	a.Metrics.failed()
	return a.Store.FailDelivery(ctx, ref.DeliveryID, ref.Run, why)
}

// webhookSchedule is sched's waits as a retry.Schedule.
func webhookSchedule(sched workflows.WebhookSchedule) retry.Schedule {
	r := retry.Webhook
	r.Base, r.Cap = sched.Base, sched.Cap
	return r
}
