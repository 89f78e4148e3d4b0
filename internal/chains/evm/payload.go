package evm

import "github.com/keeperhq/keeper/receipt"

// The anchor calldata format belongs to the receipt format (package
// receipt), so that verifiers read it without this adapter.
const (
	// PayloadPrefix starts the calldata of an anchor of a batch's own root
	// (a batch first sent before the evidence log); checkpoint anchors start
	// with receipt.PayloadPrefixCheckpoint.
	PayloadPrefix = receipt.PayloadPrefix
	// PayloadSize is the length of an anchor's calldata: prefix and 32-byte root.
	PayloadSize = receipt.EVMCalldataSize
)

// ErrNotAnchor is returned by ParsePayload for calldata that is not a keeper
// anchor.
var ErrNotAnchor = receipt.ErrNotAnchor

// Payload is the calldata anchoring root: "keeper:v1:" ‖ root.
func Payload(root [32]byte) []byte { return receipt.EVMCalldata(root) }

// ParsePayload returns what anchor calldata of either form carries.
func ParsePayload(data []byte) (receipt.Payload, error) { return receipt.ParseEVMPayload(data) }
