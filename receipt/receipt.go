// Package receipt defines the receipt keeper hands back for confirmed
// evidence: a self-contained JSON document that proves the evidence digest is
// a leaf of a Merkle root written on chain, checkable without trusting keeper.
// The format, field by field, is in the README ("Receipt format"); package
// receipt/verify checks a receipt against the chains themselves.
package receipt

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/merkle"
)

// Version is the receipt format version keeper issues.
const Version = 2

// VersionUnsalted is the first format: leaves are the bare digests, and
// anchors name no network. keeper still issues it for evidence taken in
// before salts existed, and every verifier accepts it.
const VersionUnsalted = 1

// SaltSize is the length of an evidence's salt, in bytes.
const SaltSize = 16

// Receipt proves one evidence digest was anchored on one or more chains.
type Receipt struct {
	Version    int      `json:"version"`
	EvidenceID string   `json:"evidence_id"`
	Digest     string   `json:"digest"`         // hex SHA-256 of the evidence
	Salt       string   `json:"salt,omitempty"` // v2: hex, 16 random bytes made at intake
	Tree       string   `json:"tree"`           // "rfc6962-sha256"
	Anchors    []Anchor `json:"anchors"`        // one per requested chain
}

// Anchor is the proof for one chain.
type Anchor struct {
	Chain     string    `json:"chain"`
	Network   string    `json:"network,omitempty"` // v2: CAIP-2 ("eip155:42793", "solana:5eykt4Us…")
	LeafIndex int       `json:"leaf_index"`
	TreeSize  int       `json:"tree_size"`
	Path      []string  `json:"path"` // hex sibling hashes, leaf level first
	Root      string    `json:"root"` // hex Merkle root carried by the transaction
	TxRef     string    `json:"tx_ref"`
	Block     uint64    `json:"block"`
	BlockHash string    `json:"block_hash,omitempty"` // v2: the block's hash as the chain spells it
	BlockTime time.Time `json:"block_time"`
	Finality  string    `json:"finality,omitempty"` // v2: "finalized", "confirmed" or "confirmations:N"
}

// TreeRFC6962 names the hashing scheme.
const TreeRFC6962 = "rfc6962-sha256"

// Parse decodes and validates the shape of a receipt of either version.
func Parse(data []byte) (Receipt, error) {
	var r Receipt
	if err := json.Unmarshal(data, &r); err != nil {
		return Receipt{}, fmt.Errorf("receipt: not valid JSON: %w", err)
	}
	if r.Version != Version && r.Version != VersionUnsalted {
		return Receipt{}, fmt.Errorf("receipt: unsupported version %d (this verifier reads 1 and 2)", r.Version)
	}
	if r.Tree != TreeRFC6962 {
		return Receipt{}, fmt.Errorf("receipt: unsupported tree %q", r.Tree)
	}
	if _, err := decodeHash(r.Digest); err != nil {
		return Receipt{}, fmt.Errorf("receipt: digest: %w", err)
	}
	if len(r.Anchors) == 0 {
		return Receipt{}, fmt.Errorf("receipt: no anchors")
	}
	if r.Version == Version {
		if _, err := r.salt(); err != nil {
			return Receipt{}, fmt.Errorf("receipt: salt: %w", err)
		}
		for i, a := range r.Anchors {
			if a.Network == "" {
				return Receipt{}, fmt.Errorf("receipt: anchors[%d] (%s): no network", i, a.Chain)
			}
		}
	} else if r.Salt != "" {
		return Receipt{}, fmt.Errorf("receipt: a version 1 receipt has no salt")
	}
	return r, nil
}

// Leaf is the tree leaf the receipt's evidence was anchored as: salt ‖
// digest in version 2, the bare digest in version 1. Its leaf hash is
// SHA-256(0x00 ‖ Leaf).
func (r Receipt) Leaf() ([]byte, error) {
	digest, err := decodeHash(r.Digest)
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	if r.Version == VersionUnsalted {
		return digest[:], nil
	}
	salt, err := r.salt()
	if err != nil {
		return nil, fmt.Errorf("salt: %w", err)
	}
	return Leaf(salt, digest), nil
}

// Leaf joins an evidence's salt and digest into its tree leaf; a nil salt
// (evidence taken in before salts) leaves the bare digest.
func Leaf(salt []byte, digest [32]byte) []byte {
	out := make([]byte, 0, len(salt)+len(digest))
	out = append(out, salt...)
	return append(out, digest[:]...)
}

func (r Receipt) salt() ([]byte, error) {
	b, err := hex.DecodeString(r.Salt)
	if err != nil || len(b) != SaltSize {
		return nil, fmt.Errorf("%q is not %d bytes of hex", r.Salt, SaltSize)
	}
	return b, nil
}

// CheckProof recomputes the anchor's root from the receipt's leaf and path
// and compares it with the anchor's root. It checks nothing on chain.
func (r Receipt) CheckProof(a Anchor) error {
	leaf, err := r.Leaf()
	if err != nil {
		return err
	}
	root, err := decodeHash(a.Root)
	if err != nil {
		return fmt.Errorf("root: %w", err)
	}
	path := make([]merkle.Hash, len(a.Path))
	for i, p := range a.Path {
		if path[i], err = decodeHash(p); err != nil {
			return fmt.Errorf("path[%d]: %w", i, err)
		}
	}
	if err := merkle.Verify(leaf, a.LeafIndex, a.TreeSize, path, root); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	return nil
}

// RootBytes is the anchor's root as 32 bytes.
func (a Anchor) RootBytes() ([32]byte, error) { return decodeHash(a.Root) }

// HexPath encodes an audit path.
func HexPath(path [][32]byte) []string {
	out := make([]string, len(path))
	for i, h := range path {
		out[i] = hex.EncodeToString(h[:])
	}
	return out
}

func decodeHash(s string) (merkle.Hash, error) {
	var h merkle.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%q is not 32 bytes of hex", s)
	}
	copy(h[:], b)
	return h, nil
}
