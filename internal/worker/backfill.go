package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewBackfill returns a worker on the wallet-backfill task queue with
// WalletSync, Backfill and their activities registered. At most
// o.ActivityWorkers scan activities run at once (KEEPER_BACKFILL_WORKERS:
// docs/backfill.md);
// Temporal hands a freed slot the next waiting item at once. The short
// bookkeeping steps are local activities and take no slot.
func NewBackfill(c client.Client, acts *activities.Backfill, o Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.BackfillTaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.ActivityWorkers,
		WorkerStopTimeout:                  o.DrainTimeout,
		DeploymentOptions:                  o.Versioning.deploymentOptions(),
		OnFatalError:                       o.OnFatalError,
	})
	w.RegisterWorkflowWithOptions(workflows.WalletSync, autoUpgrade)
	w.RegisterWorkflowWithOptions(workflows.Backfill, autoUpgrade)
	RegisterBackfillActivities(w, acts)
	return w
}
