package receipt

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/merkle"
)

// Rows are what a store knows of one confirmed evidence: plain data, no
// proofs. Build turns them into its receipt.
type Rows struct {
	EvidenceID string
	Digest     [32]byte
	Salt       []byte // nil for evidence taken in before salts (a version 1 receipt)
	// LogIndex is the evidence's index in the evidence log, when InLog.
	LogIndex uint64
	InLog    bool
	// LogOrigin and LogKey (a note verifier key) name the log.
	LogOrigin string
	LogKey    string
	// Anchors are the evidence's confirmed anchors, one per chain, in the
	// order the receipt lists them.
	Anchors []AnchorRow
	// Checkpoints are signed checkpoints by tree size; Build needs the one
	// of the largest size a checkpoint anchor committed to, unless Head is
	// set.
	Checkpoints map[uint64][]byte
	// Head, when set, is the signed checkpoint the receipt names instead:
	// one at least as large as every anchored one (the newest checkpoint
	// the log's witnesses cosigned, their lines included).
	Head []byte
}

// AnchorRow is one chain's confirmed anchor of the evidence.
type AnchorRow struct {
	Chain     string
	Network   string // CAIP-2
	TxRef     string
	Block     uint64
	BlockTime time.Time
	BlockHash string
	Finality  string
	Account   string // the account that sent the transaction
	// LogSize is the size of the checkpoint the transaction committed to,
	// and Root its root; 0 marks a batch anchor, whose Root is its batch's.
	LogSize uint64
	Root    [32]byte
	// BatchID, LeafIndex and BatchSize place the evidence in its batch's
	// tree (batch anchors only).
	BatchID   int64
	LeafIndex int
	BatchSize int
}

// ProofSource computes the proofs a receipt carries, from the log's stored
// hashes and the batches' leaves.
type ProofSource interface {
	// Inclusion is the RFC 6962 inclusion proof of entry index in the tree
	// of the log's first size entries, the leaf's sibling first.
	Inclusion(ctx context.Context, index, size uint64) ([][32]byte, error)
	// Consistency is the RFC 6962 consistency proof from the log's tree of
	// size m to its tree of size n.
	Consistency(ctx context.Context, m, n uint64) ([][32]byte, error)
	// BatchLeafHashes are the leaf hashes of a batch's tree, in leaf order.
	BatchLeafHashes(ctx context.Context, batchID int64) ([][32]byte, error)
}

// Build makes the receipt of one evidence, the one place keeper does: version
// 1 for evidence without a salt, version 2 for evidence no anchor of which
// committed to a log checkpoint, else version 3, whose inclusion proof leads
// to the largest checkpoint its anchors committed to (or to Rows.Head). Build checks every
// proof it writes against the roots in the rows and the signed checkpoint,
// so it fails rather than issue a receipt that would not verify.
func Build(ctx context.Context, rows Rows, src ProofSource) (Receipt, error) {
	fail := func(format string, args ...any) (Receipt, error) {
		return Receipt{}, fmt.Errorf("receipt of %s: %s", rows.EvidenceID, fmt.Sprintf(format, args...))
	}
	if len(rows.Anchors) == 0 {
		return fail("no anchors")
	}
	r := Receipt{EvidenceID: rows.EvidenceID, Digest: hex.EncodeToString(rows.Digest[:]), Tree: TreeRFC6962}
	var checkpointAnchors int
	for _, a := range rows.Anchors {
		if a.LogSize > 0 {
			checkpointAnchors++
		}
	}
	switch {
	case len(rows.Salt) == 0 && checkpointAnchors > 0:
		return fail("an evidence without a salt has no log entry, yet an anchor committed to a checkpoint for it")
	case len(rows.Salt) == 0:
		r.Version = VersionUnsalted
	case len(rows.Salt) != SaltSize:
		return fail("salt is %d bytes, not %d", len(rows.Salt), SaltSize)
	case checkpointAnchors > 0 && !rows.InLog:
		return fail("an anchor committed to a checkpoint, but the evidence has no log index")
	case checkpointAnchors > 0:
		r.Version = Version
		r.Salt = hex.EncodeToString(rows.Salt)
	default:
		r.Version = VersionSalted
		r.Salt = hex.EncodeToString(rows.Salt)
	}

	var head evlog.Checkpoint
	if r.Version == Version {
		var err error
		if r.Log, head, err = buildLog(ctx, rows, src); err != nil {
			return fail("%v", err)
		}
	}
	leaf := Leaf(rows.Salt, rows.Digest)
	for _, a := range rows.Anchors {
		var (
			out Anchor
			err error
		)
		if a.LogSize > 0 {
			out, err = checkpointAnchorOf(ctx, rows, a, head, src)
		} else {
			out, err = batchAnchorOf(ctx, leaf, a, src)
		}
		if err != nil {
			return fail("%s anchor %s: %v", a.Chain, a.TxRef, err)
		}
		switch r.Version {
		case VersionUnsalted:
			out.Network, out.BlockHash, out.Finality = "", "", "" // as version 1 was always written
		case Version:
			out.Account = a.Account
			out.Kind = cmp.Or(out.Kind, AnchorBatch)
		}
		r.Anchors = append(r.Anchors, out)
	}
	if r.Version == Version { // versions 1 and 2 are written as they always were
		r.ExistedBy = EarliestBlockTime(r.Anchors)
	}
	return r, nil
}

// EarliestBlockTime is the earliest block time of anchors (zero when none
// states one): the bound a receipt proves, its ExistedBy. Every anchor a
// receipt lists is final, so every one counts.
func EarliestBlockTime(anchors []Anchor) time.Time {
	var t time.Time
	for _, a := range anchors {
		if !a.BlockTime.IsZero() && (t.IsZero() || a.BlockTime.Before(t)) {
			t = a.BlockTime
		}
	}
	return t.UTC()
}

// buildLog proves the evidence's entry is in the largest checkpoint its
// anchors committed to, or in Head.
func buildLog(ctx context.Context, rows Rows, src ProofSource) (*Log, evlog.Checkpoint, error) {
	var anchored uint64
	for _, a := range rows.Anchors {
		anchored = max(anchored, a.LogSize)
	}
	size, signed := anchored, rows.Head
	if signed == nil {
		var ok bool
		if signed, ok = rows.Checkpoints[size]; !ok {
			return nil, evlog.Checkpoint{}, fmt.Errorf("no signed checkpoint of size %d, the largest anchored", size)
		}
	}
	key, err := evlog.ParseKey(rows.LogKey)
	if err != nil {
		return nil, evlog.Checkpoint{}, err
	}
	head, err := key.Open(signed)
	if err == nil && rows.Head != nil {
		if size = head.Size; size < anchored {
			return nil, evlog.Checkpoint{}, fmt.Errorf("the checkpoint named (%d entries) is smaller than one anchored (%d)", size, anchored)
		}
	}
	switch {
	case err != nil:
		return nil, evlog.Checkpoint{}, fmt.Errorf("checkpoint of size %d: %w", size, err)
	case head.Size != size:
		return nil, evlog.Checkpoint{}, fmt.Errorf("the checkpoint stored for size %d is of size %d", size, head.Size)
	case rows.LogOrigin != "" && head.Origin != rows.LogOrigin:
		return nil, evlog.Checkpoint{}, fmt.Errorf("the checkpoint is of log %q, not %q", head.Origin, rows.LogOrigin)
	case rows.LogIndex >= size:
		return nil, evlog.Checkpoint{}, fmt.Errorf("log index %d is not in the checkpoint of size %d", rows.LogIndex, size)
	}
	proof, err := src.Inclusion(ctx, rows.LogIndex, size)
	if err != nil {
		return nil, evlog.Checkpoint{}, fmt.Errorf("inclusion proof of %d in %d: %w", rows.LogIndex, size, err)
	}
	entry := evlog.EntryOf(rows.Salt, rows.Digest)
	if err := merkle.Verify(entry[:], int(rows.LogIndex), int(size), hashes(proof), head.Root); err != nil {
		return nil, evlog.Checkpoint{}, fmt.Errorf("inclusion proof of %d in %d: %w", rows.LogIndex, size, err)
	}
	return &Log{Origin: head.Origin, Key: key.Text, Index: rows.LogIndex, Checkpoint: string(signed), Inclusion: HexHashes(proof)}, head, nil
}

func checkpointAnchorOf(ctx context.Context, rows Rows, a AnchorRow, head evlog.Checkpoint, src ProofSource) (Anchor, error) {
	if a.LogSize <= rows.LogIndex {
		return Anchor{}, fmt.Errorf("it committed to size %d, which does not hold log index %d", a.LogSize, rows.LogIndex)
	}
	proof := [][32]byte{}
	if a.LogSize < head.Size {
		var err error
		if proof, err = src.Consistency(ctx, a.LogSize, head.Size); err != nil {
			return Anchor{}, fmt.Errorf("consistency proof from %d to %d: %w", a.LogSize, head.Size, err)
		}
	}
	if err := merkle.VerifyConsistency(a.LogSize, head.Size, a.Root, head.Root, hashes(proof)); err != nil {
		return Anchor{}, fmt.Errorf("its checkpoint (size %d, root %x) and the receipt's: %w", a.LogSize, a.Root, err)
	}
	return Anchor{
		Kind: AnchorCheckpoint, Chain: a.Chain, Network: a.Network, TreeSize: int(a.LogSize), Root: hex.EncodeToString(a.Root[:]),
		Consistency: HexHashes(proof), TxRef: a.TxRef, Block: a.Block, BlockHash: a.BlockHash, BlockTime: a.BlockTime, Finality: a.Finality,
	}, nil
}

func batchAnchorOf(ctx context.Context, leaf []byte, a AnchorRow, src ProofSource) (Anchor, error) {
	leaves, err := src.BatchLeafHashes(ctx, a.BatchID)
	if err != nil {
		return Anchor{}, fmt.Errorf("leaves of batch %d: %w", a.BatchID, err)
	}
	if a.BatchSize != 0 && len(leaves) != a.BatchSize {
		return Anchor{}, fmt.Errorf("batch %d has %d leaves, its anchor says %d", a.BatchID, len(leaves), a.BatchSize)
	}
	tree, err := merkle.FromLeafHashes(hashes(leaves))
	if err != nil {
		return Anchor{}, fmt.Errorf("batch %d: %w", a.BatchID, err)
	}
	if tree.Root() != a.Root {
		return Anchor{}, fmt.Errorf("batch %d's leaves hash to root %x, its transaction carries %x", a.BatchID, tree.Root(), a.Root)
	}
	path, err := tree.Path(a.LeafIndex)
	if err != nil {
		return Anchor{}, fmt.Errorf("batch %d: %w", a.BatchID, err)
	}
	if tree.LeafHashes()[a.LeafIndex] != merkle.LeafHash(leaf) {
		return Anchor{}, errors.New("the evidence is not the leaf its index names")
	}
	return Anchor{
		Chain: a.Chain, Network: a.Network, LeafIndex: a.LeafIndex, TreeSize: tree.Size(), Path: HexHashes(path),
		Root: hex.EncodeToString(a.Root[:]), TxRef: a.TxRef, Block: a.Block, BlockHash: a.BlockHash, BlockTime: a.BlockTime, Finality: a.Finality,
	}, nil
}

func hashes(in [][32]byte) []merkle.Hash {
	out := make([]merkle.Hash, len(in))
	for i, h := range in {
		out[i] = h
	}
	return out
}
