package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewWebhook returns a worker on the webhook task queue with DeliverWebhook
// and its activities registered (see workflows.WebhookTaskQueue for why the
// queue is apart).
func NewWebhook(c client.Client, acts *activities.Webhook, o Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.WebhookTaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.ActivityWorkers,
		WorkerStopTimeout:                  o.DrainTimeout,
		DeploymentOptions:                  o.Versioning.deploymentOptions(),
		OnFatalError:                       o.OnFatalError,
	})
	// A delivery retries for up to a day: its runs move to new builds
	// (autoUpgrade), so its code stays replay-compatible across builds.
	w.RegisterWorkflowWithOptions(workflows.DeliverWebhook, autoUpgrade)
	RegisterWebhookActivities(w, acts)
	return w
}
