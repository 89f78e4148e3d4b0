package api

import "time"

// RedriveResult is the answer of POST /v1/dead-letters/redrive: what a
// re-drive put back or, in a dry run, would.
type RedriveResult struct {
	DryRun      bool           `json:"dry_run"`
	Evidence    int            `json:"evidence"` // distinct evidence
	Anchors     int            `json:"anchors"`  // one per evidence and chain
	ByChain     map[string]int `json:"by_chain"`
	Batches     []RedriveBatch `json:"batches"`
	EvidenceIDs []string       `json:"evidence_ids"`                // the first 100
	MoreIDs     bool           `json:"more_evidence_ids,omitempty"` // more evidence than EvidenceIDs lists
}

// RedriveBatch is a dead-lettered batch a re-drive took anchors from.
type RedriveBatch struct {
	ID             int64     `json:"id"`
	Chain          string    `json:"chain"`
	Evidence       int       `json:"evidence"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	LastError      string    `json:"last_error,omitempty"`
}

// RedriveRequest is the body of POST /v1/dead-letters/redrive: which
// dead-lettered evidence to put back. Each field set narrows the selection;
// {} selects every dead-lettered evidence.
type RedriveRequest struct {
	Chain  string `json:"chain,omitempty"`   // only anchors on this chain
	Batch  int64  `json:"batch,omitempty"`   // only the anchors of this batch
	Since  string `json:"since,omitempty"`   // RFC 3339: only batches dead-lettered at or after
	Until  string `json:"until,omitempty"`   // RFC 3339: only batches dead-lettered before
	DryRun bool   `json:"dry_run,omitempty"` // answer what would be re-driven, change nothing
}
