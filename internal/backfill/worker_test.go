package backfill_test

import (
	"testing"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/worker/workertest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Workflows call activities by name: every method is registered under its
// own name and no other, and those are the names WalletSync calls.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	workertest.RequireEachMethodUnderItsName(t, &backfill.Activities{}, backfill.RegisterActivities,
		workflows.ScanNetworkActivity, workflows.FailScanActivity, workflows.FinishWalletActivity)
}
