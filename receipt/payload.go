package receipt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PayloadPrefix starts what an anchor of a batch's own Merkle root writes on
// chain (receipt versions 1 and 2: batches first sent before the evidence
// log; newer anchors commit to a checkpoint, PayloadPrefixCheckpoint): the
// EVM transaction's calldata (followed by the 32 root bytes) and the Solana
// memo (followed by the root in 64 lowercase hex characters).
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

// PayloadPrefixCheckpoint starts the payload of an anchor that commits to a
// checkpoint of keeper's evidence log (receipt version 3): the log key's
// hash, the tree size and the root, from which a verifier holding the log's
// key rebuilds the checkpoint body (evlog.Checkpoint) from the chain alone.
const PayloadPrefixCheckpoint = "keeper:v3:"

// EVMCheckpointCalldataSize is the length of an EVM checkpoint anchor's
// calldata: the prefix, a 4-byte key hash, an 8-byte size and the root,
// integers big-endian.
const EVMCheckpointCalldataSize = len(PayloadPrefixCheckpoint) + 4 + 8 + 32

// CheckpointRef is what an anchor commits to: a checkpoint of the log whose
// key has KeyHash.
type CheckpointRef struct {
	KeyHash uint32
	Size    uint64
	Root    [32]byte
}

// Payload is what an anchor transaction carries: a batch's own root
// (receipts of versions 1 and 2) or a log checkpoint (version 3).
type Payload struct {
	Root       [32]byte       // the root either way
	Checkpoint *CheckpointRef // nil for a batch root
}

// EVMCheckpointCalldata is the calldata anchoring a checkpoint.
func EVMCheckpointCalldata(c CheckpointRef) []byte {
	out := make([]byte, 0, EVMCheckpointCalldataSize)
	out = append(out, PayloadPrefixCheckpoint...)
	out = binary.BigEndian.AppendUint32(out, c.KeyHash)
	out = binary.BigEndian.AppendUint64(out, c.Size)
	return append(out, c.Root[:]...)
}

// SolanaCheckpointMemo is the memo anchoring a checkpoint:
// "keeper:v3:<key hash, 8 hex>:<size, decimal>:<root, 64 hex>".
func SolanaCheckpointMemo(c CheckpointRef) string {
	return fmt.Sprintf("%s%08x:%d:%s", PayloadPrefixCheckpoint, c.KeyHash, c.Size, hex.EncodeToString(c.Root[:]))
}

// SolanaCheckpointMemoForBatch is SolanaCheckpointMemo followed by ":" and
// the batch's id: two batches may commit to one checkpoint, and Solana
// takes two transactions with the same payer, memo and blockhash for one.
func SolanaCheckpointMemoForBatch(c CheckpointRef, batch int64) string {
	return fmt.Sprintf("%s:%d", SolanaCheckpointMemo(c), batch)
}

// ParseEVMPayload reads anchor calldata of either form.
func ParseEVMPayload(data []byte) (Payload, error) {
	if !bytes.HasPrefix(data, []byte(PayloadPrefixCheckpoint)) {
		root, err := ParseEVMCalldata(data)
		return Payload{Root: root}, err
	}
	if len(data) != EVMCheckpointCalldataSize {
		return Payload{}, fmt.Errorf("%w: calldata is %d bytes, want %d", ErrNotAnchor, len(data), EVMCheckpointCalldataSize)
	}
	rest := data[len(PayloadPrefixCheckpoint):]
	c := CheckpointRef{KeyHash: binary.BigEndian.Uint32(rest), Size: binary.BigEndian.Uint64(rest[4:])}
	copy(c.Root[:], rest[12:])
	return Payload{Root: c.Root, Checkpoint: &c}, nil
}

// ParseSolanaPayload reads an anchor memo of either form; it accepts only
// the exact forms SolanaMemo, SolanaCheckpointMemo and
// SolanaCheckpointMemoForBatch make (the batch id is checked, not returned).
func ParseSolanaPayload(memo string) (Payload, error) {
	rest, ok := strings.CutPrefix(memo, PayloadPrefixCheckpoint)
	if !ok {
		root, err := ParseSolanaMemo(memo)
		return Payload{Root: root}, err
	}
	parts := strings.Split(rest, ":")
	if len(parts) == 4 {
		if b, err := strconv.ParseInt(parts[3], 10, 64); err != nil || b < 1 || strconv.FormatInt(b, 10) != parts[3] {
			return Payload{}, fmt.Errorf("%w: memo batch %q is not a positive decimal number", ErrNotAnchor, parts[3])
		}
		parts = parts[:3]
	}
	if len(parts) != 3 || len(parts[0]) != 8 || !lowerHex(parts[0]) || !lowerHex(parts[2]) {
		return Payload{}, fmt.Errorf("%w: memo is not %q<key hash>:<size>:<root>", ErrNotAnchor, PayloadPrefixCheckpoint)
	}
	kh, _ := strconv.ParseUint(parts[0], 16, 32)
	size, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != parts[1] {
		return Payload{}, fmt.Errorf("%w: memo size %q is not a decimal number", ErrNotAnchor, parts[1])
	}
	c := CheckpointRef{KeyHash: uint32(kh), Size: size}
	root, err := ParseSolanaMemo(PayloadPrefix + parts[2])
	if err != nil {
		return Payload{}, err
	}
	c.Root = root
	return Payload{Root: root, Checkpoint: &c}, nil
}

func lowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
