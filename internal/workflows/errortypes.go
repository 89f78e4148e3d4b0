package workflows

// Types of the application errors activities fail with, seen in workflow
// histories and by retry policies.
const (
	// ErrTypeTransient is a failure a later attempt may not meet.
	ErrTypeTransient = "Transient"
	// ErrTypePermanent is a failure no retry can fix.
	ErrTypePermanent = "Permanent"
	// ErrTypeScanFailed is a scan attempt that failed for a reason worth a
	// later retry. Scan failures are non-retryable for Temporal's activity
	// retry: the Backfill workflow applies the backfill schedule itself
	// (docs/retries.md, backfill). Only timeouts (a worker that stopped
	// heartbeating) are retried by Temporal, at once, from the last
	// checkpoint.
	ErrTypeScanFailed = "ScanFailed"
	// ErrTypeQuarantine marks a failed check on an epoch's inputs or
	// payouts: not retried; the workflow quarantines the epoch.
	ErrTypeQuarantine = "Quarantine"
	// ErrTypeWebhookGone is a delivery whose webhook was deleted or
	// disabled (or is disabled by this attempt's 410 answer): no further
	// attempt is made, and the delivery fails at once.
	ErrTypeWebhookGone = "WebhookGone"
)
