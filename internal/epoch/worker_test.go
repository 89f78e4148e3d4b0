package epoch_test

import (
	"testing"

	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/worker/workertest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Workflows call activities by name: every method is registered under its
// own name and no other, and those are the names EpochCompute calls.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	workertest.RequireEachMethodUnderItsName(t, &epoch.Activities{}, epoch.RegisterActivities,
		workflows.SealInputsActivity, workflows.ComputeRewardsActivity, workflows.WriteArtifactsActivity,
		workflows.EmitIntentsActivity, workflows.AnchorCommitmentActivity, workflows.FinishEpochActivity)
}
