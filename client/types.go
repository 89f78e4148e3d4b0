package client

import "github.com/keeperhq/keeper/api"

// The API's bodies, declared once in package api and named here so that a
// client's user needs one import. See package api for their fields.
type (
	// Evidence is an evidence as the API answers it.
	Evidence = api.Evidence
	// EvidenceAnchor is an evidence's state on one chain.
	EvidenceAnchor = api.EvidenceAnchor
	// EvidencePage is a page of GET /v1/evidence.
	EvidencePage = api.EvidencePage

	// EpochRequest is the body of POST /rewarder/epochs/{id}/compute: Pool,
	// and Usage or Source.
	EpochRequest = api.EpochRequest
	// Usage is one account's units in an epoch.
	Usage = api.Usage
	// Manifest is an epoch's run manifest.
	Manifest = api.Manifest
	// Artifact is a file an epoch wrote, relative to KEEPER_ARTIFACT_DIR.
	Artifact = api.Artifact
	// IntentCounts count an epoch's settlement intents.
	IntentCounts = api.IntentCounts
	// EpochAnchor is the evidence that anchors an epoch's commitment.
	EpochAnchor = api.EpochAnchor

	// WalletRequest is the body of POST /v1/wallets.
	WalletRequest = api.WalletRequest
	// Wallet is a wallet's backfill.
	Wallet = api.Wallet
	// WalletNetwork is a wallet's backfill on one network.
	WalletNetwork = api.WalletNetwork
	// Progress is how far a network's scan is.
	Progress = api.Progress
	// Balance is a wallet's balance of one asset on one network.
	Balance = api.Balance
	// TransferPage is a page of a wallet's transfers.
	TransferPage = api.TransferPage
	// Transfer is one stored transfer.
	Transfer = api.Transfer

	// RedriveResult is what a re-drive put back or, in a dry run, would.
	RedriveResult = api.RedriveResult
	// RedriveBatch is a dead-lettered batch a re-drive took anchors from.
	RedriveBatch = api.RedriveBatch

	// Webhook is a subscription (docs/webhooks.md). Secret is set only in
	// the answers of CreateWebhook and RotateWebhookSecret: keep it then.
	Webhook = api.Webhook
	// WebhookRequest subscribes URL to events (evidence.confirmed, …).
	WebhookRequest = api.WebhookRequest
	// WebhookRotation is rotate-secret's body.
	WebhookRotation = api.WebhookRotation
	// Delivery is one event's delivery to one webhook.
	Delivery = api.Delivery
)
