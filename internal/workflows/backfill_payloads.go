package workflows

import (
	"time"

	"github.com/keeperhq/keeper/internal/retry"
)

// WalletSync's and Backfill's activities, by the names workers register
// them under (backfill.NewWorker). The names are in recorded workflow
// histories: never rename them.
const (
	ScanNetworkActivity  = "ScanNetwork"
	FailScanActivity     = "FailScan"
	FinishWalletActivity = "FinishWallet"
)

// BackfillRef names one (wallet, network) item: ids only, never transfers.
type BackfillRef struct {
	Wallet  string
	Network string
}

// ScanResult is what a completed scan covered.
type ScanResult struct {
	Target    uint64 // last block or slot scanned
	Scanned   uint64 // blocks or signatures
	Transfers int    // rows stored for the network
}

// RetrySchedule is the backfill retry rule as the workflows carry it in
// their input (docs/retries.md, backfill): delay = min(Base·2^(retry−1), Cap)
// plus uniform jitter of up to JitterPct percent of it, the formula of
// retry.Backfill; after MaxRetries retries the item is ABANDONED. Its fields
// are what workflow histories hold, so they stay as they are.
type RetrySchedule struct {
	MaxRetries int
	Base       time.Duration // 2 min
	Cap        time.Duration // 60 min
	JitterPct  int           // 25
}

// DefaultRetrySchedule is retry.Backfill's numbers.
var DefaultRetrySchedule = RetrySchedule{
	MaxRetries: retry.BackfillMaxRetries, Base: retry.Backfill.Base, Cap: retry.Backfill.Cap, JitterPct: retry.Backfill.JitterPct,
}

// Schedule is r's delays as a retry.Schedule.
func (r RetrySchedule) Schedule() retry.Schedule {
	s := retry.Backfill
	s.Base, s.Cap, s.JitterPct = r.Base, r.Cap, r.JitterPct
	return s
}

// Delay is the wait before retry n (1-based), without jitter.
func (r RetrySchedule) Delay(n int) time.Duration { return r.Schedule().Delay(n) }

// FailInput reports a failed scan attempt. Now is the workflow's clock, so
// the stored next retry time agrees with the timer the workflow sets.
type FailInput struct {
	Ref       BackfillRef
	Error     string
	Permanent bool
	Now       time.Time
	Schedule  RetrySchedule
}

// How a backfill item ends: FailOutcome.Status and the workflows' results.
// The values are in recorded workflow histories; FailScan translates the
// store's states into them.
const (
	BackfillCompleted = "COMPLETED"
	BackfillFailed    = "FAILED"
	BackfillAbandoned = "ABANDONED"
)

// FailOutcome is what became of the item.
type FailOutcome struct {
	Status      string // BackfillFailed (waiting for a retry, or for good when Wait is 0) or BackfillAbandoned
	RetryCount  int
	Wait        time.Duration // until the next retry; 0: none
	NextRetryAt time.Time
}

// WalletSummary is how a wallet's balances came out. Its fields are in
// recorded workflow histories: add, never rename.
type WalletSummary struct {
	Assets       int
	Reconciled   int
	Unreconciled int
	Unchecked    int
	Stale        int  // of a network waiting for its retry: its last computed balances, awaiting recalculation
	Busy         bool // a network was PENDING or RUNNING: nothing was finished
}
