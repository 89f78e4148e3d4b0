package api

import (
	"encoding/json"
	"time"

	"github.com/keeperhq/keeper/receipt"
)

// Evidence is an evidence as the API answers it (GET /v1/evidence/{id},
// POST /v1/evidence, and the items of GET /v1/evidence).
type Evidence struct {
	ID     string `json:"id"`
	Status string `json:"status"` // pending, batched, submitted, confirmed or dead_letter
	Digest string `json:"digest"`
	// Salt is only in the evidence's own answers, never in lists.
	Salt           string           `json:"salt,omitempty"`
	Chains         []string         `json:"chains"`
	Priority       int              `json:"priority"`
	IdempotencyKey string           `json:"idempotency_key,omitempty"`
	Metadata       json.RawMessage  `json:"metadata,omitempty"`
	Attempts       int              `json:"attempts"`
	LastError      string           `json:"last_error,omitempty"`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
	Anchors        []EvidenceAnchor `json:"anchors"`
	// ExistedBy, once confirmed, is the bound its receipt proves: the
	// evidence existed no later than its earliest anchor's block time on
	// chain (docs/receipts.md).
	ExistedBy time.Time        `json:"existed_by,omitzero"`
	Receipt   *receipt.Receipt `json:"receipt,omitempty"` // once confirmed; never in lists
	// ReceiptWaits, for a confirmed evidence without its receipt yet, says
	// what it waits for: the log's witnesses to cosign a checkpoint that
	// holds its anchors (docs/log.md, Witnesses).
	ReceiptWaits string            `json:"receipt_waits,omitempty"`
	Links        map[string]string `json:"links"`
}

// EvidenceAnchor is an evidence's state on one chain.
type EvidenceAnchor struct {
	Chain  string `json:"chain"`
	Status string `json:"status"`
	// BatchDueAt, for an evidence not yet in a batch, is when the chain's
	// next batch is due by its anchor interval (sooner when the batch fills).
	BatchDueAt time.Time `json:"batch_due_at,omitzero"`
	BatchID    int64     `json:"batch_id,omitempty"`
	TxRef      string    `json:"tx_ref,omitempty"`
	Block      uint64    `json:"block,omitempty"`
	BlockTime  time.Time `json:"block_time,omitzero"` // once confirmed: the block's time as the chain states it
}

// EvidencePage is a page of GET /v1/evidence.
type EvidencePage struct {
	Items      []Evidence `json:"items"`
	NextCursor string     `json:"next_cursor"` // "" on the last page
}

// EvidenceRequest is the body of POST /v1/evidence and an item of POST
// /v1/evidence/batch: Digest or Content, and Chains.
type EvidenceRequest struct {
	Digest   string          `json:"digest,omitempty"`   // hex SHA-256
	Content  string          `json:"content,omitempty"`  // or the bytes in standard base64, hashed by keeper
	Chains   []string        `json:"chains"`             // "etherlink", "solana", "stub", or "multi" for every configured chain
	Priority int             `json:"priority,omitempty"` // 1 (highest) to 10; absent: 5
	Metadata json.RawMessage `json:"metadata,omitempty"` // a JSON object, at most 16 KiB
	// IdempotencyKey is required of a batch's items; POST /v1/evidence
	// takes it here or, as the client sends it, in the Idempotency-Key
	// header.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// BatchRequest is the body of POST /v1/evidence/batch: 1 to 1000 items.
type BatchRequest struct {
	Items []EvidenceRequest `json:"items"`
}
