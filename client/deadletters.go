package client

import (
	"context"
	"net/http"
	"time"
)

// RedriveRequest is the body of POST /v1/dead-letters/redrive: which
// dead-lettered evidence to put back. Each field set narrows the selection;
// the zero request selects every dead-lettered evidence.
type RedriveRequest struct {
	Chain  string    `json:"chain,omitempty"`   // only anchors on this chain
	Batch  int64     `json:"batch,omitempty"`   // only the anchors of this batch
	Since  time.Time `json:"since,omitzero"`    // only batches dead-lettered at or after
	Until  time.Time `json:"until,omitzero"`    // only batches dead-lettered before
	DryRun bool      `json:"dry_run,omitempty"` // answer what would be re-driven, change nothing
}

// RedriveResult is what a re-drive put back or, in a dry run, would.
type RedriveResult struct {
	DryRun      bool           `json:"dry_run"`
	Evidence    int            `json:"evidence"` // distinct evidence
	Anchors     int            `json:"anchors"`  // one per evidence and chain
	ByChain     map[string]int `json:"by_chain"`
	Batches     []RedriveBatch `json:"batches"`
	EvidenceIDs []string       `json:"evidence_ids"` // the first 100
	MoreIDs     bool           `json:"more_evidence_ids,omitempty"`
}

// RedriveBatch is a dead-lettered batch a re-drive took anchors from.
type RedriveBatch struct {
	ID             int64     `json:"id"`
	Chain          string    `json:"chain"`
	Evidence       int       `json:"evidence"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	LastError      string    `json:"last_error,omitempty"`
}

// Redrive re-drives dead-lettered evidence in bulk (POST
// /v1/dead-letters/redrive), or with DryRun says what it would. Running it
// again after it succeeded re-drives nothing.
func (cl *Client) Redrive(ctx context.Context, r RedriveRequest) (*RedriveResult, error) {
	res, _, err := send[RedriveResult](ctx, cl, call{method: http.MethodPost, path: "/v1/dead-letters/redrive", body: r})
	return res, err
}
