package backfill

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewWorker returns a worker on the wallet-backfill task queue with
// WalletSync, Backfill and their activities registered. At most
// o.ActivityWorkers scan activities run at once (KEEPER_BACKFILL_WORKERS:
// docs/backfill.md); Temporal hands a freed slot the next waiting item at
// once. The short bookkeeping steps are local activities and take no slot.
// Start it with Start, stop it with Stop.
func NewWorker(c client.Client, acts *Activities, o worker.Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.BackfillTaskQueue, o.SDKOptions())
	// A wallet's retries wait up to an hour, five times: its runs move to
	// new builds (worker.AutoUpgrade), so their code stays replay-compatible
	// across builds.
	w.RegisterWorkflowWithOptions(workflows.WalletSync, worker.AutoUpgrade)
	w.RegisterWorkflowWithOptions(workflows.Backfill, worker.AutoUpgrade)
	RegisterActivities(w, acts)
	return w
}

// RegisterActivities registers WalletSync's and Backfill's activities on r
// under the names they call them by.
func RegisterActivities(r worker.Registry, a *Activities) { worker.Register(r, a.byName()) }
