package epoch

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// NewWorker returns a worker on the reward-epoch task queue with
// EpochCompute and its activities registered. It runs beside the anchoring
// worker in the same process (see workflows.EpochTaskQueue for why the
// queues are apart).
func NewWorker(c client.Client, acts *Activities, o worker.Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.EpochTaskQueue, o.SDKOptions())
	w.RegisterWorkflowWithOptions(workflows.EpochCompute, worker.Pinned)
	RegisterActivities(w, acts)
	return w
}

// RegisterActivities registers EpochCompute's activities on r, each under
// the name the workflow calls it by (workflows.*Activity): the method's
// own name, which recorded histories hold.
func RegisterActivities(r worker.Registry, a *Activities) { worker.Register(r, activitiesByName(a)) }

func activitiesByName(a *Activities) map[string]any {
	return map[string]any{
		workflows.SealInputsActivity:       a.SealInputs,
		workflows.ComputeRewardsActivity:   a.ComputeRewards,
		workflows.WriteArtifactsActivity:   a.WriteArtifacts,
		workflows.EmitIntentsActivity:      a.EmitIntents,
		workflows.AnchorCommitmentActivity: a.AnchorCommitment,
		workflows.FinishEpochActivity:      a.FinishEpoch,
	}
}
