// Package receipt defines the receipt keeper hands back for confirmed
// evidence: a self-contained JSON document that proves the evidence digest is
// held by a Merkle tree whose root is written on chain, checkable without
// trusting keeper. Version 3 proves the evidence's entry is in keeper's
// evidence log (a C2SP transparency log, package evlog) at a signed
// checkpoint, and that each chain's anchor committed to a checkpoint the
// signed one extends; versions 1 and 2 prove a leaf of one batch's own tree.
// The format, field by field, is in docs/receipts.md; Build is
// the one place receipts are made, and package receipt/verify checks a
// receipt against the chains themselves.
package receipt

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/strictjson"
	"github.com/keeperhq/keeper/merkle"
)

// Version is the receipt format version keeper issues: an inclusion proof
// in the evidence log, the signed checkpoint it leads to, and per chain the
// anchor of a checkpoint that one extends.
const Version = 3

// VersionSalted is the second format: each anchor proves a leaf (salt ‖
// digest) of its batch's own tree and names its network. keeper issues it
// for evidence anchored before the evidence log.
const VersionSalted = 2

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
	Salt       string   `json:"salt,omitempty"` // v2, v3: hex, 16 random bytes made at intake
	Tree       string   `json:"tree"`           // "rfc6962-sha256"
	Log        *Log     `json:"log,omitempty"`  // v3: where the evidence is in the evidence log
	Anchors    []Anchor `json:"anchors"`        // one per requested chain
	// ExistedBy is the bound the receipt proves: the evidence existed no
	// later than this, the earliest anchor's block time on chain. A
	// verifier reads it off the chains and checks this copy against them.
	ExistedBy time.Time `json:"existed_by,omitzero"`
}

// Log is a version 3 receipt's proof that the evidence's entry,
// evlog.EntryOf(salt, digest), is in the evidence log.
type Log struct {
	Origin string `json:"origin"` // the log's origin, its checkpoints' first line
	// Key is the log's verifier key (note vkey). It lets a verifier without a
	// key of its own check the checkpoint, which proves only that the
	// receipt is self-consistent: verifiers pin the key and warn when they
	// fall back to this one.
	Key        string   `json:"key,omitempty"`
	Index      uint64   `json:"index"`      // the entry's index in the log
	Checkpoint string   `json:"checkpoint"` // the signed checkpoint (c2sp.org/tlog-checkpoint) the proof leads to
	Inclusion  []string `json:"inclusion"`  // hex RFC 6962 inclusion proof, the leaf's sibling first
}

// The kinds of a version 3 receipt's anchors.
const (
	// AnchorCheckpoint is an anchor whose transaction committed to a
	// checkpoint of the log (its TreeSize and Root), with a consistency
	// proof from it to the receipt's checkpoint. A version 3 anchor that
	// names no kind is one.
	AnchorCheckpoint = "checkpoint"
	// AnchorBatch is an anchor made before the log: its transaction carries
	// its batch's own root, proved as in version 2 (LeafIndex, TreeSize,
	// Path, Root over the leaf salt ‖ digest).
	AnchorBatch = "batch"
)

// Anchor is the proof for one chain. Versions 1 and 2 fill the batch
// fields (LeafIndex, TreeSize, Path, Root); a version 3 checkpoint anchor
// fills TreeSize, Root and Consistency instead.
type Anchor struct {
	Kind        string    `json:"kind,omitempty"` // v3: AnchorCheckpoint or AnchorBatch
	Chain       string    `json:"chain"`
	Network     string    `json:"network,omitempty"` // v2, v3: CAIP-2 ("eip155:42793", "solana:5eykt4Us…")
	LeafIndex   int       `json:"leaf_index"`
	TreeSize    int       `json:"tree_size"`             // the batch's size, or the anchored checkpoint's
	Path        []string  `json:"path"`                  // hex sibling hashes, leaf level first
	Root        string    `json:"root"`                  // hex Merkle root carried by the transaction
	Consistency []string  `json:"consistency,omitempty"` // v3: hex proof from (TreeSize, Root) to the receipt's checkpoint
	TxRef       string    `json:"tx_ref"`
	Block       uint64    `json:"block"`
	BlockHash   string    `json:"block_hash,omitempty"` // v2, v3: the block's hash as the chain spells it
	BlockTime   time.Time `json:"block_time"`
	Finality    string    `json:"finality,omitempty"` // v2, v3: "finalized", "confirmed" or "confirmations:N"
	Account     string    `json:"account,omitempty"`  // v3: the account that sent the transaction
}

// checkpointAnchor is how a checkpoint anchor is written: without a batch's
// leaf index and path, and with its consistency proof even when empty.
type checkpointAnchor struct {
	Kind        string    `json:"kind"`
	Chain       string    `json:"chain"`
	Network     string    `json:"network"`
	TxRef       string    `json:"tx_ref"`
	Block       uint64    `json:"block"`
	BlockHash   string    `json:"block_hash"`
	BlockTime   time.Time `json:"block_time"`
	Finality    string    `json:"finality"`
	Account     string    `json:"account"`
	TreeSize    int       `json:"tree_size"`
	Root        string    `json:"root"`
	Consistency []string  `json:"consistency"`
}

// MarshalJSON writes a checkpoint anchor in its own shape and any other as
// its fields say (versions 1 and 2 exactly as they always were written).
func (a Anchor) MarshalJSON() ([]byte, error) {
	if a.Kind != AnchorCheckpoint {
		type plain Anchor
		return json.Marshal(plain(a))
	}
	c := checkpointAnchor{Kind: a.Kind, Chain: a.Chain, Network: a.Network, TxRef: a.TxRef, Block: a.Block, BlockHash: a.BlockHash,
		BlockTime: a.BlockTime, Finality: a.Finality, Account: a.Account, TreeSize: a.TreeSize, Root: a.Root, Consistency: a.Consistency}
	if c.Consistency == nil {
		c.Consistency = []string{}
	}
	return json.Marshal(c)
}

// TreeRFC6962 names the hashing scheme.
const TreeRFC6962 = "rfc6962-sha256"

// Parse decodes and validates the shape of a receipt of any version. It
// proves nothing: Check* and package receipt/verify do.
func Parse(data []byte) (Receipt, error) {
	var r Receipt
	// Strict, as every verifier reads receipts alike (conformance/README.md):
	// exact keys, none twice, none unknown, nothing after the object, so
	// no two parsers can read one file as two receipts.
	if err := strictjson.DecodeAs("the receipt", data, &r); err != nil {
		return Receipt{}, fmt.Errorf("receipt: %s", err.Message)
	}
	if r.Version != Version && r.Version != VersionSalted && r.Version != VersionUnsalted {
		return Receipt{}, fmt.Errorf("receipt: unsupported version %d (this verifier reads 1, 2 and 3)", r.Version)
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
	if r.Version == VersionUnsalted {
		if r.Salt != "" {
			return Receipt{}, fmt.Errorf("receipt: a version 1 receipt has no salt")
		}
	} else if _, err := r.salt(); err != nil {
		return Receipt{}, fmt.Errorf("receipt: salt: %w", err)
	}
	if r.Version != Version {
		if r.Log != nil {
			return Receipt{}, fmt.Errorf("receipt: a version %d receipt has no log", r.Version)
		}
		for i, a := range r.Anchors {
			if a.Kind != "" || a.Account != "" || a.Consistency != nil {
				return Receipt{}, fmt.Errorf("receipt: anchors[%d] (%s): kind, account and consistency are version 3 fields", i, a.Chain)
			}
			if r.Version == VersionSalted && a.Network == "" {
				return Receipt{}, fmt.Errorf("receipt: anchors[%d] (%s): no network", i, a.Chain)
			}
		}
		return r, nil
	}
	if err := r.Log.check(); err != nil {
		return Receipt{}, fmt.Errorf("receipt: log: %w", err)
	}
	for i := range r.Anchors {
		if err := r.Anchors[i].checkV3(); err != nil {
			return Receipt{}, fmt.Errorf("receipt: anchors[%d] (%s): %w", i, r.Anchors[i].Chain, err)
		}
	}
	return r, nil
}

func (l *Log) check() error {
	switch {
	case l == nil:
		return fmt.Errorf("a version 3 receipt needs one")
	case l.Checkpoint == "":
		return fmt.Errorf("no checkpoint")
	}
	if err := evlog.CheckOrigin(l.Origin); err != nil {
		return err
	}
	if l.Key != "" {
		if _, err := evlog.ParseKey(l.Key); err != nil {
			return err
		}
	}
	if _, err := decodeHashes(l.Inclusion); err != nil {
		return fmt.Errorf("inclusion: %w", err)
	}
	return nil
}

// checkV3 validates a version 3 anchor's shape, reading a missing kind as
// a checkpoint anchor.
func (a *Anchor) checkV3() error {
	a.Kind = cmp.Or(a.Kind, AnchorCheckpoint)
	if a.Network == "" {
		return fmt.Errorf("no network")
	}
	if _, err := decodeHash(a.Root); err != nil {
		return fmt.Errorf("root: %w", err)
	}
	switch a.Kind {
	case AnchorBatch:
		if a.Consistency != nil {
			return fmt.Errorf("a batch anchor has no consistency proof")
		}
		return nil
	case AnchorCheckpoint:
		if a.TreeSize <= 0 {
			return fmt.Errorf("tree_size %d: an anchored checkpoint holds at least one entry", a.TreeSize)
		}
		if a.LeafIndex != 0 || a.Path != nil {
			return fmt.Errorf("a checkpoint anchor has no leaf_index or path (the log's inclusion proof is the receipt's)")
		}
		if _, err := decodeHashes(a.Consistency); err != nil {
			return fmt.Errorf("consistency: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q (want %q or %q)", a.Kind, AnchorCheckpoint, AnchorBatch)
}

// Leaf is the batch tree leaf the receipt's evidence was anchored as (by
// every anchor of versions 1 and 2, and by a version 3 batch anchor): salt ‖
// digest, or the bare digest in version 1. Its leaf hash is SHA-256(0x00 ‖
// Leaf).
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

// CheckProof checks an anchor's proofs offline: for a batch anchor, that
// the receipt's leaf and the anchor's path give the anchor's root; for a
// checkpoint anchor, that the anchored tree holds the entry's index, that
// the inclusion proof gives the receipt checkpoint's root and that the
// anchored tree is consistent with it. It checks neither the checkpoint's
// signature (that needs the log's key) nor anything on chain.
func (r Receipt) CheckProof(a Anchor) error {
	if a.Kind == AnchorCheckpoint {
		if r.Log == nil {
			return fmt.Errorf("proof: a checkpoint anchor in a receipt with no log")
		}
		c, err := CheckpointBody(r.Log.Checkpoint)
		if err != nil {
			return fmt.Errorf("proof: %w", err)
		}
		if uint64(a.TreeSize) <= r.Log.Index {
			return fmt.Errorf("proof: the anchored tree of %d entries does not hold index %d", a.TreeSize, r.Log.Index)
		}
		if err := r.CheckInclusion(c); err != nil {
			return err
		}
		return a.CheckConsistency(c)
	}
	leaf, err := r.Leaf()
	if err != nil {
		return err
	}
	root, err := decodeHash(a.Root)
	if err != nil {
		return fmt.Errorf("root: %w", err)
	}
	path, err := decodeHashes(a.Path)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if err := merkle.Verify(leaf, a.LeafIndex, a.TreeSize, path, root); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	return nil
}

// CheckpointBody reads a signed checkpoint's body without checking its
// signature: the text before the blank line that ends it.
func CheckpointBody(signed string) (evlog.Checkpoint, error) {
	body, _, ok := strings.Cut(signed, "\n\n")
	if !ok {
		return evlog.Checkpoint{}, fmt.Errorf("checkpoint: not a signed note")
	}
	return evlog.ParseBody(body + "\n")
}

// Entry is the receipt's evidence log entry, evlog.EntryOf(salt, digest).
func (r Receipt) Entry() ([32]byte, error) {
	digest, err := decodeHash(r.Digest)
	if err != nil {
		return [32]byte{}, fmt.Errorf("digest: %w", err)
	}
	salt, err := r.salt()
	if err != nil {
		return [32]byte{}, fmt.Errorf("salt: %w", err)
	}
	return evlog.EntryOf(salt, digest), nil
}

// CheckInclusion checks that the receipt's entry sits at its log index in
// the tree of checkpoint c (which the caller has opened with the log's key):
// the inclusion proof recomputes c's root. It checks nothing on chain.
func (r Receipt) CheckInclusion(c evlog.Checkpoint) error {
	if r.Log == nil {
		return fmt.Errorf("inclusion: a version %d receipt has no log", r.Version)
	}
	if r.Log.Index >= c.Size {
		return fmt.Errorf("inclusion: index %d is not in a checkpoint of size %d", r.Log.Index, c.Size)
	}
	entry, err := r.Entry()
	if err != nil {
		return err
	}
	path, err := decodeHashes(r.Log.Inclusion)
	if err != nil {
		return fmt.Errorf("inclusion: %w", err)
	}
	if c.Size > 1<<62 {
		return fmt.Errorf("inclusion: checkpoint size %d is beyond any log", c.Size)
	}
	if err := merkle.Verify(entry[:], int(r.Log.Index), int(c.Size), path, c.Root); err != nil {
		return fmt.Errorf("inclusion: %w", err)
	}
	return nil
}

// CheckConsistency checks that checkpoint c (the receipt's, opened with the
// log's key) extends the checkpoint the anchor committed to: the anchor's
// consistency proof leads from its TreeSize and Root to c's size and root.
func (a Anchor) CheckConsistency(c evlog.Checkpoint) error {
	if a.Kind != AnchorCheckpoint {
		return fmt.Errorf("consistency: a %s anchor committed to no checkpoint", a.Kind)
	}
	if a.TreeSize <= 0 {
		return fmt.Errorf("consistency: tree_size %d", a.TreeSize)
	}
	root, err := decodeHash(a.Root)
	if err != nil {
		return fmt.Errorf("consistency: root: %w", err)
	}
	proof, err := decodeHashes(a.Consistency)
	if err != nil {
		return fmt.Errorf("consistency: %w", err)
	}
	if err := merkle.VerifyConsistency(uint64(a.TreeSize), c.Size, root, c.Root, proof); err != nil {
		return fmt.Errorf("consistency: from size %d to %d: %w", a.TreeSize, c.Size, err)
	}
	return nil
}

// RootBytes is the anchor's root as 32 bytes.
func (a Anchor) RootBytes() ([32]byte, error) { return decodeHash(a.Root) }

// HexPath encodes an audit path.
func HexPath(path [][32]byte) []string { return HexHashes(path) }

// HexHashes encodes hashes in hex (merkle.Hash or [32]byte).
func HexHashes[H ~[32]byte](hashes []H) []string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = hex.EncodeToString(h[:])
	}
	return out
}

func decodeHashes(hexes []string) ([]merkle.Hash, error) {
	out := make([]merkle.Hash, len(hexes))
	for i, s := range hexes {
		h, err := decodeHash(s)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = h
	}
	return out, nil
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
