package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewEpoch returns a worker on the reward-epoch task queue with EpochCompute
// and its activities registered. It runs beside the anchoring worker in the
// same process (see workflows.EpochTaskQueue for why the queues are apart).
func NewEpoch(c client.Client, epoch *activities.Epoch, o Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.EpochTaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.ActivityWorkers,
		WorkerStopTimeout:                  o.DrainTimeout,
		DeploymentOptions:                  o.Versioning.deploymentOptions(),
		OnFatalError:                       o.OnFatalError,
	})
	w.RegisterWorkflowWithOptions(workflows.EpochCompute, pinned)
	RegisterEpochActivities(w, epoch)
	return w
}
