package workflows

import (
	"cmp"
	"errors"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// WebhookTaskQueue is the task queue of webhook deliveries, apart from
// anchoring so that slow endpoints never hold the slots that anchor evidence.
const WebhookTaskQueue = "keeper-webhook"

// WebhookPolicy is a delivery's retry schedule, fixed for the life of the
// workflow and visible in its history.
type WebhookPolicy struct {
	RetryFor  time.Duration // the retry window: attempts stop after this long and the delivery fails
	RetryBase time.Duration // first wait between attempts; doubles each time
	RetryCap  time.Duration // longest wait between attempts
	// AttemptTimeout bounds one attempt, as Temporal sees it: an attempt
	// whose worker died is made again after this long. Longer than the
	// activity's own limit on the endpoint's answer (0: twice
	// WebhookTimeout).
	AttemptTimeout time.Duration
}

// WebhookInput names the delivery's run: ids only, never its body or the
// webhook's secret.
type WebhookInput struct {
	Delivery DeliveryRef
	Policy   WebhookPolicy
}

// WebhookWorkflowID is the id of a delivery run's workflow; it de-duplicates
// starts (a re-drive is a new run, so a new workflow).
func WebhookWorkflowID(ref DeliveryRef) string {
	return "webhook-" + ref.DeliveryID + "-" + strconv.Itoa(ref.Run)
}

// DeliverWebhook sends one delivery: SendWebhook retried by Temporal until
// it succeeds or RetryFor has passed; then, or when the webhook was
// deleted or disabled (a 410 answer disables it), the delivery is marked
// failed, to be re-driven through the API. The activity sets each wait
// itself (jittered exponential backoff, or the receiver's Retry-After:
// WebhookSchedule); the retry policy's backoff applies only to
// an attempt that timed out. Retries of one activity add no history
// events, so the history stays a handful of events however long the
// delivery retries.
func DeliverWebhook(ctx workflow.Context, in WebhookInput) error {
	p := in.Policy
	attempt := cmp.Or(p.AttemptTimeout, 2*WebhookTimeout)
	sendCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    attempt,
		ScheduleToCloseTimeout: p.RetryFor,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        p.RetryBase,
			BackoffCoefficient:     2,
			MaximumInterval:        p.RetryCap,
			NonRetryableErrorTypes: []string{ErrTypeWebhookGone},
		},
	})
	sched := WebhookSchedule{Base: p.RetryBase, Cap: p.RetryCap}
	err := workflow.ExecuteActivity(sendCtx, SendWebhookActivity, in.Delivery, sched).Get(ctx, nil)
	if err == nil {
		return nil
	}
	why := "retries used up after " + p.RetryFor.String()
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == ErrTypeWebhookGone {
		why = app.Message()
	}
	failCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	return workflow.ExecuteActivity(failCtx, FailWebhookDeliveryActivity, in.Delivery, why).Get(ctx, nil)
}
