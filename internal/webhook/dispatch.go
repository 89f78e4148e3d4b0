package webhook

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
	"github.com/keeperhq/keeper/internal/sweep"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Temporal is the Temporal client as the dispatcher needs it: it starts
// DeliverWebhook workflows (client.Client is one).
type Temporal interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Queue is the store as the dispatcher needs it: recorded deliveries not
// yet handed to Temporal (*store.Store).
type Queue interface {
	UnstartedDeliveries(ctx context.Context, limit int) ([]store.Delivery, error)
	MarkDeliveryStarted(ctx context.Context, id string, run int) error
}

// Dispatcher hands recorded webhook deliveries to Temporal: one
// DeliverWebhook per run of a delivery, with workflow id
// webhook-<delivery>-<run>, so a start repeated after a crash finds the
// workflow already there. Deliveries are recorded by the store with the
// state changes they tell of, in any process; the sweep picks them up
// (docs/webhooks.md).
type Dispatcher struct {
	Store    Queue
	Temporal Temporal
	Policy   workflows.WebhookPolicy
	Sweep    time.Duration
	Logger   *slog.Logger
}

// Run starts recorded deliveries until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) {
	sweep.Run(ctx, d.Sweep, nil, d.StartDue, d.Logger, "webhooks: start delivery workflows; will retry")
}

// StartDue starts a workflow for every delivery not started yet.
func (d *Dispatcher) StartDue(ctx context.Context) error {
	for {
		due, err := d.Store.UnstartedDeliveries(ctx, 100)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, dl := range due {
			if err := d.start(ctx, dl); err != nil {
				return fmt.Errorf("delivery %s: %w", dl.ID, err)
			}
			if err := d.Store.MarkDeliveryStarted(ctx, dl.ID, dl.Run); err != nil {
				return err
			}
		}
	}
}

// start starts the delivery's run, or finds it started already.
func (d *Dispatcher) start(ctx context.Context, dl store.Delivery) error {
	ref := workflows.DeliveryRef{DeliveryID: dl.ID, Run: dl.Run}
	opts := client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(ref),
		TaskQueue: workflows.WebhookTaskQueue,
		// A run's workflow that already ran is not run again: a re-drive
		// is a new run.
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}
	_, err := d.Temporal.ExecuteWorkflow(ctx, opts, workflows.DeliverWebhook, workflows.WebhookInput{Delivery: ref, Policy: d.Policy})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}
