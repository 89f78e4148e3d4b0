package webhook_test

import (
	"testing"

	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/worker/workertest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Workflows call activities by name: every method is registered under its
// own name and no other, and those are the names DeliverWebhook calls.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	workertest.RequireEachMethodUnderItsName(t, &webhook.Activities{}, webhook.RegisterActivities,
		workflows.SendWebhookActivity, workflows.FailWebhookDeliveryActivity)
}
