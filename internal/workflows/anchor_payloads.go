package workflows

import "time"

// AnchorBatch's activities, by the names workers register them under
// (anchor.NewWorker). The names are in recorded workflow histories: never
// rename them.
const (
	SubmitAnchorActivity   = "SubmitAnchor"
	ConfirmAnchorActivity  = "ConfirmAnchor"
	RecordReceiptsActivity = "RecordReceipts"
	DeadLetterActivity     = "DeadLetter"
)

// BatchRef names a batch in activity inputs: ids only, never digests.
type BatchRef struct {
	BatchID int64
	Chain   string
	// PriorAttempts is how many attempts of the step ran before this
	// activity (a submit that goes on after its local attempts,
	// RevisionOutlastOutages): its attempts are numbered after them, so
	// the schedule's delay and the attempts users see go on.
	PriorAttempts int32 `json:",omitempty"`
}

// SubmitResult is what SubmitAnchor recorded.
type SubmitResult struct {
	Root  string // hex
	TxRef string
}

// ConfirmResult is where the batch's transaction became final, or that it
// was dropped and must be submitted again.
type ConfirmResult struct {
	Dropped   bool
	Detail    string
	TxRef     string
	Block     uint64
	BlockTime time.Time
	BlockHash string // as the chain spells it
	Finality  string // the rule that made it final ("finalized", "confirmations:N")
}

// DeadLetterInput ends a batch.
type DeadLetterInput struct {
	BatchID int64
	Error   string
}
