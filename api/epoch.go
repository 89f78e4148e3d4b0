package api

import "github.com/keeperhq/keeper/receipt"

// EpochRequest is the body of POST /rewarder/epochs/{id}/compute: Pool, and
// Usage or Source.
type EpochRequest struct {
	Pool     string  `json:"pool"` // integer minor units, decimal
	Usage    []Usage `json:"usage,omitempty"`
	Source   string  `json:"source,omitempty"`   // URL of an accounting service answering the usage list
	Deadline string  `json:"deadline,omitempty"` // a duration such as "15m"
}

// Usage is one account's units in an epoch.
type Usage struct {
	Account string `json:"account"`
	Units   string `json:"units"` // decimal
}

// Manifest is an epoch's run manifest.
type Manifest struct {
	Epoch       string            `json:"epoch"`
	Status      string            `json:"status"` // queued, computing, quarantined, completed, failed
	Reason      string            `json:"reason,omitempty"`
	Run         int               `json:"run"`
	RequestHash string            `json:"request_hash"`
	InputsHash  string            `json:"inputs_hash,omitempty"`
	Pool        string            `json:"pool"`
	Source      string            `json:"source,omitempty"`
	TotalUnits  string            `json:"total_units,omitempty"`
	TotalPaid   string            `json:"total_paid,omitempty"`
	Accounts    int               `json:"accounts"`
	Commitment  string            `json:"commitment,omitempty"`
	Artifacts   []Artifact        `json:"artifacts"`
	Intents     IntentCounts      `json:"intents"`
	Anchor      *EpochAnchor      `json:"anchor,omitempty"`
	Deadline    string            `json:"deadline"`
	Timings     map[string]string `json:"timings"`
	Links       map[string]string `json:"links"`
}

// Artifact is a file an epoch wrote.
type Artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"` // relative to KEEPER_ARTIFACT_DIR
	SHA256 string `json:"sha256"`
}

// IntentCounts count an epoch's settlement intents.
type IntentCounts struct {
	Total        int `json:"total"`
	Emitted      int `json:"emitted"`
	Acknowledged int `json:"acknowledged"`
}

// EpochAnchor is the evidence that anchors an epoch's commitment.
type EpochAnchor struct {
	EvidenceID string           `json:"evidence_id"`
	Status     string           `json:"status"`
	Receipt    *receipt.Receipt `json:"receipt,omitempty"`
}
