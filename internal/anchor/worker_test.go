package anchor_test

import (
	"testing"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/worker/workertest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Workflows call activities by name: every method is registered under its
// own name and no other, and those are the names AnchorBatch calls.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	workertest.RequireEachMethodUnderItsName(t, &anchor.Activities{}, anchor.RegisterActivities,
		workflows.SubmitAnchorActivity, workflows.ConfirmAnchorActivity, workflows.RecordReceiptsActivity, workflows.DeadLetterActivity)
}
