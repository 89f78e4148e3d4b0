package anchor

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewWorker returns a worker on the anchoring task queue with AnchorBatch
// and its activities registered. Start it with Start, stop it with Stop.
func NewWorker(c client.Client, acts *Activities, o worker.Options) sdkworker.Worker {
	opts := o.SDKOptions()
	// SubmitAnchor and RecordReceipts run as local activities: the same
	// limit, counted apart.
	opts.MaxConcurrentLocalActivityExecutionSize = o.ActivityWorkers
	w := sdkworker.New(c, workflows.AnchorTaskQueue, opts)
	w.RegisterWorkflowWithOptions(workflows.AnchorBatch, worker.Pinned)
	RegisterActivities(w, acts)
	return w
}

// RegisterActivities registers AnchorBatch's activities on r under the
// names it calls them by.
func RegisterActivities(r worker.Registry, a *Activities) { worker.Register(r, a.byName()) }
