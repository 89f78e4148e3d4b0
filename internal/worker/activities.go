package worker

import (
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Registry is where activities are registered: a worker, or a test's
// workflow environment.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// The activities of each feature by the names its workflows call them
// (workflows.*Activity): each method under its own name, the name
// registering the struct gave it before workflows called them by name, and
// that recorded histories hold.

func anchorActivities(a *activities.Anchor) map[string]any {
	return map[string]any{
		workflows.SubmitAnchorActivity:   a.SubmitAnchor,
		workflows.ConfirmAnchorActivity:  a.ConfirmAnchor,
		workflows.RecordReceiptsActivity: a.RecordReceipts,
		workflows.DeadLetterActivity:     a.DeadLetter,
	}
}

func backfillActivities(a *activities.Backfill) map[string]any {
	return map[string]any{
		workflows.ScanNetworkActivity:  a.ScanNetwork,
		workflows.FailScanActivity:     a.FailScan,
		workflows.FinishWalletActivity: a.FinishWallet,
	}
}

func epochActivities(a *activities.Epoch) map[string]any {
	return map[string]any{
		workflows.SealInputsActivity:       a.SealInputs,
		workflows.ComputeRewardsActivity:   a.ComputeRewards,
		workflows.WriteArtifactsActivity:   a.WriteArtifacts,
		workflows.EmitIntentsActivity:      a.EmitIntents,
		workflows.AnchorCommitmentActivity: a.AnchorCommitment,
		workflows.FinishEpochActivity:      a.FinishEpoch,
	}
}

func webhookActivities(a *activities.Webhook) map[string]any {
	return map[string]any{
		workflows.SendWebhookActivity:         a.SendWebhook,
		workflows.FailWebhookDeliveryActivity: a.FailWebhookDelivery,
	}
}

// RegisterAnchorActivities registers AnchorBatch's activities on r.
func RegisterAnchorActivities(r Registry, a *activities.Anchor) { register(r, anchorActivities(a)) }

// RegisterBackfillActivities registers WalletSync's and Backfill's
// activities on r.
func RegisterBackfillActivities(r Registry, a *activities.Backfill) {
	register(r, backfillActivities(a))
}

// RegisterEpochActivities registers EpochCompute's activities on r.
func RegisterEpochActivities(r Registry, a *activities.Epoch) { register(r, epochActivities(a)) }

// RegisterWebhookActivities registers DeliverWebhook's activities on r.
func RegisterWebhookActivities(r Registry, a *activities.Webhook) {
	register(r, webhookActivities(a))
}

func register(r Registry, byName map[string]any) {
	for name, fn := range byName {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
