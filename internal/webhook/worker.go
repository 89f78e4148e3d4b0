package webhook

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewWorker returns a worker on the webhook task queue with DeliverWebhook
// and its activities registered (see workflows.WebhookTaskQueue for why the
// queue is apart). Start it with Start, stop it with Stop.
func NewWorker(c client.Client, acts *Activities, o worker.Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.WebhookTaskQueue, o.SDKOptions())
	// A delivery retries for up to a day: its runs move to new builds
	// (worker.AutoUpgrade), so its code stays replay-compatible across
	// builds.
	w.RegisterWorkflowWithOptions(workflows.DeliverWebhook, worker.AutoUpgrade)
	RegisterActivities(w, acts)
	return w
}

// RegisterActivities registers DeliverWebhook's activities on r under the
// names it calls them by.
func RegisterActivities(r worker.Registry, a *Activities) { worker.Register(r, a.byName()) }
