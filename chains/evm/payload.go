package evm

import (
	"bytes"
	"errors"
	"fmt"
)

// PayloadPrefix starts the calldata of every keeper anchor transaction.
const PayloadPrefix = "keeper:v1:"

// PayloadSize is the length of an anchor's calldata: prefix and 32-byte root.
const PayloadSize = len(PayloadPrefix) + 32

// ErrNotAnchor is returned by ParsePayload (and VerifyTx) for calldata that is
// not a keeper anchor.
var ErrNotAnchor = errors.New("not a keeper anchor payload")

// Payload is the calldata anchoring root: "keeper:v1:" ‖ root.
func Payload(root [32]byte) []byte {
	out := make([]byte, 0, PayloadSize)
	out = append(out, PayloadPrefix...)
	return append(out, root[:]...)
}

// ParsePayload returns the root carried by anchor calldata.
func ParsePayload(data []byte) ([32]byte, error) {
	var root [32]byte
	if !bytes.HasPrefix(data, []byte(PayloadPrefix)) {
		return root, fmt.Errorf("%w: calldata does not start with %q", ErrNotAnchor, PayloadPrefix)
	}
	if len(data) != PayloadSize {
		return root, fmt.Errorf("%w: calldata is %d bytes, want %d", ErrNotAnchor, len(data), PayloadSize)
	}
	copy(root[:], data[len(PayloadPrefix):])
	return root, nil
}
