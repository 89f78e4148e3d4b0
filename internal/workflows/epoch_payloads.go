package workflows

// EpochCompute's activities, by the names workers register them under
// (epoch.NewWorker). The names are in recorded workflow histories: never
// rename them.
const (
	SealInputsActivity       = "SealInputs"
	ComputeRewardsActivity   = "ComputeRewards"
	WriteArtifactsActivity   = "WriteArtifacts"
	EmitIntentsActivity      = "EmitIntents"
	AnchorCommitmentActivity = "AnchorCommitment"
	FinishEpochActivity      = "FinishEpoch"
)

// EpochRef names an epoch's run in activity inputs.
type EpochRef struct {
	EpochID string
	Run     int
}

// SealResult is where the sealed inputs are.
type SealResult struct {
	InputsHash string // hex SHA-256 of the sealed inputs
	InputsPath string // relative to the artifact directory
	Accounts   int
}

// ComputeResult is where the payouts are and what they add up to.
type ComputeResult struct {
	PayoutsHash string
	PayoutsPath string
	Accounts    int
	Intents     int // payouts above zero
	TotalPaid   string
}

// ArtifactsInput is what WriteArtifacts builds on.
type ArtifactsInput struct {
	Inputs  SealResult
	Payouts ComputeResult
}

// ArtifactsResult is where run.json and the commitment are.
type ArtifactsResult struct {
	RunPath        string
	RunHash        string
	Commitment     string // hex RFC 6962 root over the payout lines
	CommitmentPath string
	CommitmentHash string
}

// IntentsResult counts the intents sent and acknowledged.
type IntentsResult struct {
	Emitted      int
	Acknowledged int
	Replayed     int // acknowledged by the ledger from its own records (already held)
}

// AnchorResult names the evidence that anchors the commitment.
type AnchorResult struct {
	EvidenceID string
}

// EpochOutcome ends an epoch's run.
type EpochOutcome struct {
	Status string // EpochCompleted, EpochQuarantined or EpochFailed
	Reason string
}

// How an epoch's run ends: EpochOutcome.Status and the workflow's result.
// The values are in recorded workflow histories; FinishEpoch translates them
// into the store's statuses.
const (
	EpochCompleted   = "completed"
	EpochQuarantined = "quarantined"
	EpochFailed      = "failed"
)
