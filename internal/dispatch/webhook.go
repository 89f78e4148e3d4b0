package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// WorkflowStarter starts a workflow; a Temporal client is one.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// DeliveryQueue is the store as the webhook dispatcher needs it: recorded
// deliveries not yet handed to Temporal (*store.Store).
type DeliveryQueue interface {
	UnstartedDeliveries(ctx context.Context, limit int) ([]store.Delivery, error)
	MarkDeliveryStarted(ctx context.Context, id string, run int) error
}

// Webhooks hands recorded webhook deliveries to Temporal: one DeliverWebhook
// per run of a delivery, with workflow id webhook-<delivery>-<run>, so a
// start repeated after a crash finds the workflow already there. Deliveries
// are recorded by the activities that change state, in any worker process;
// the sweep picks them up (docs/webhooks.md).
type Webhooks struct {
	Store    DeliveryQueue
	Temporal WorkflowStarter
	Policy   workflows.WebhookPolicy
	Sweep    time.Duration
	Logger   *slog.Logger
}

// Run starts recorded deliveries until ctx is done.
func (w *Webhooks) Run(ctx context.Context) {
	sweep(ctx, w.Sweep, nil, w.StartDue, w.Logger, "webhooks: start delivery workflows; will retry")
}

// StartDue starts a workflow for every delivery not started yet.
func (w *Webhooks) StartDue(ctx context.Context) error {
	for {
		due, err := w.Store.UnstartedDeliveries(ctx, 100)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, d := range due {
			ref := workflows.DeliveryRef{DeliveryID: d.ID, Run: d.Run}
			opts := client.StartWorkflowOptions{
				ID:        workflows.WebhookWorkflowID(ref),
				TaskQueue: workflows.WebhookTaskQueue,
				// A run's workflow that already ran is not run again: a
				// re-drive is a new run.
				WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			}
			_, err := w.Temporal.ExecuteWorkflow(ctx, opts, workflows.DeliverWebhook, workflows.WebhookInput{Delivery: ref, Policy: w.Policy})
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			if err != nil && !errors.As(err, &started) {
				return fmt.Errorf("delivery %s: %w", d.ID, err)
			}
			if err := w.Store.MarkDeliveryStarted(ctx, d.ID, d.Run); err != nil {
				return err
			}
		}
	}
}
