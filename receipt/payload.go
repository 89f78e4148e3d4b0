package receipt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// PayloadPrefix starts what every anchor writes on chain: the EVM
// transaction's calldata (followed by the 32 root bytes) and the Solana memo
// (followed by the root in 64 lowercase hex characters).
const PayloadPrefix = "keeper:v1:"

// EVMCalldataSize is the length of an EVM anchor's calldata.
const EVMCalldataSize = len(PayloadPrefix) + 32

// ErrNotAnchor is returned for calldata or a memo that is not a keeper anchor.
var ErrNotAnchor = errors.New("not a keeper anchor payload")

// EVMCalldata is the calldata anchoring root: "keeper:v1:" ‖ root.
func EVMCalldata(root [32]byte) []byte {
	out := make([]byte, 0, EVMCalldataSize)
	out = append(out, PayloadPrefix...)
	return append(out, root[:]...)
}

// ParseEVMCalldata returns the root carried by anchor calldata; anything but
// that exact form wraps ErrNotAnchor.
func ParseEVMCalldata(data []byte) ([32]byte, error) {
	var root [32]byte
	if !bytes.HasPrefix(data, []byte(PayloadPrefix)) {
		return root, fmt.Errorf("%w: calldata does not start with %q", ErrNotAnchor, PayloadPrefix)
	}
	if len(data) != EVMCalldataSize {
		return root, fmt.Errorf("%w: calldata is %d bytes, want %d", ErrNotAnchor, len(data), EVMCalldataSize)
	}
	copy(root[:], data[len(PayloadPrefix):])
	return root, nil
}

// SolanaMemo is the memo text that anchors root: "keeper:v1:" + hex(root).
func SolanaMemo(root [32]byte) string {
	return PayloadPrefix + hex.EncodeToString(root[:])
}

// ParseSolanaMemo returns the root of an anchor memo. It accepts only the
// exact form SolanaMemo makes: the prefix and 64 lowercase hex characters.
func ParseSolanaMemo(memo string) ([32]byte, error) {
	var root [32]byte
	rest, ok := strings.CutPrefix(memo, PayloadPrefix)
	if !ok {
		return root, fmt.Errorf("%w: memo does not start with %q", ErrNotAnchor, PayloadPrefix)
	}
	if len(rest) != 64 {
		return root, fmt.Errorf("%w: memo must hold 64 hex characters after %q, got %d", ErrNotAnchor, PayloadPrefix, len(rest))
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return root, fmt.Errorf("%w: memo root must be lowercase hex", ErrNotAnchor)
		}
	}
	_, err := hex.Decode(root[:], []byte(rest))
	return root, err
}

// EVMNetwork is the CAIP-2 id of the EVM chain with the given chain id
// (eth_chainId): "eip155:42793" for EtherLink mainnet.
func EVMNetwork(chainID uint64) string { return fmt.Sprintf("eip155:%d", chainID) }

// SolanaNetwork is the CAIP-2 id of the Solana cluster with the given
// genesis hash (getGenesisHash, base58): "solana:" and the hash's first 32
// characters ("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" for mainnet-beta).
func SolanaNetwork(genesisHash string) string {
	if len(genesisHash) > 32 {
		genesisHash = genesisHash[:32]
	}
	return "solana:" + genesisHash
}
