// Package receipt defines the receipt keeper hands back for confirmed
// evidence: a self-contained JSON document that proves the evidence digest is
// a leaf of a Merkle root written on chain, checkable without trusting keeper.
package receipt

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/merkle"
)

// Version is the receipt format version.
const Version = 1

// Receipt proves one evidence digest was anchored on one or more chains.
type Receipt struct {
	Version    int      `json:"version"`
	EvidenceID string   `json:"evidence_id"`
	Digest     string   `json:"digest"`  // hex SHA-256 of the evidence
	Tree       string   `json:"tree"`    // "rfc6962-sha256"
	Anchors    []Anchor `json:"anchors"` // one per requested chain
}

// Anchor is the proof for one chain.
type Anchor struct {
	Chain     string    `json:"chain"`
	LeafIndex int       `json:"leaf_index"`
	TreeSize  int       `json:"tree_size"`
	Path      []string  `json:"path"` // hex sibling hashes, leaf level first
	Root      string    `json:"root"` // hex Merkle root carried by the transaction
	TxRef     string    `json:"tx_ref"`
	Block     uint64    `json:"block"`
	BlockTime time.Time `json:"block_time"`
}

// TreeRFC6962 names the hashing scheme.
const TreeRFC6962 = "rfc6962-sha256"

// Parse decodes and validates the shape of a receipt.
func Parse(data []byte) (Receipt, error) {
	var r Receipt
	if err := json.Unmarshal(data, &r); err != nil {
		return Receipt{}, fmt.Errorf("receipt: not valid JSON: %w", err)
	}
	if r.Version != Version {
		return Receipt{}, fmt.Errorf("receipt: unsupported version %d", r.Version)
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
	return r, nil
}

// CheckProof recomputes the anchor's root from the receipt's digest and path
// and compares it with the anchor's root. It checks nothing on chain.
func (r Receipt) CheckProof(a Anchor) error {
	digest, err := decodeHash(r.Digest)
	if err != nil {
		return fmt.Errorf("digest: %w", err)
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
	if err := merkle.Verify(digest[:], a.LeafIndex, a.TreeSize, path, root); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	return nil
}

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
