package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewAnchor returns a worker on the anchoring task queue with keeper's workflows
// and activities registered. Start it with Start, stop it with Stop.
func NewAnchor(c client.Client, anchor *activities.Anchor, o Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.AnchorTaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.ActivityWorkers,
		// SubmitAnchor and RecordReceipts run as local activities: the same
		// limit, counted apart.
		MaxConcurrentLocalActivityExecutionSize: o.ActivityWorkers,
		WorkerStopTimeout:                       o.DrainTimeout,
		DeploymentOptions:                       o.Versioning.deploymentOptions(),
		OnFatalError:                            o.OnFatalError,
	})
	w.RegisterWorkflowWithOptions(workflows.AnchorBatch, Pinned)
	RegisterAnchorActivities(w, anchor)
	return w
}
