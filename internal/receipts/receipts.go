// Package receipts builds a confirmed evidence's receipt (the receipt/
// format) from keeper's records: what GET /v1/evidence/{id}/receipt
// answers, what the evidence's own view and the receipts archive hold, and
// what a reward epoch's manifest shows for the evidence that anchors its
// commitment.
package receipts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// Rows is the store as receipts need it: an evidence's place in the log,
// the log's key and checkpoints, and the proofs (*store.Store).
type Rows interface {
	receipt.ProofSource
	LogIndexOf(ctx context.Context, evidenceID string) (idx uint64, ok bool, err error)
	LogKey(ctx context.Context) (string, error)
	CheckpointsAt(ctx context.Context, sizes []uint64) (map[uint64][]byte, error)
	WitnessedCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	TrustRoot(ctx context.Context) (store.TrustRoot, error)
}

// ErrAwaitingWitnesses is Of's answer for a confirmed evidence whose
// receipt waits for the log's witnesses: the trust root asks for a quorum
// of cosignatures at the size its anchors committed to, and no checkpoint
// that large has it yet (docs/log.md, Witnesses).
var ErrAwaitingWitnesses = errors.New("its receipt waits for the log's witnesses to cosign a checkpoint that holds its anchors")

// head is the checkpoint a version 3 receipt names: the newest one the
// witnesses' quorum cosigned when it holds every anchored size (a receipt
// fetched later names a newer one), else the largest anchored, which
// stands only while the trust root asks for no quorum at its size.
func head(ctx context.Context, st Rows, anchored uint64) ([]byte, error) {
	w, err := st.WitnessedCheckpoint(ctx)
	switch {
	case err == nil && w.Size >= anchored:
		return w.Note, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	t, err := st.TrustRoot(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if q := t.Root.Witnesses.QuorumAt(anchored); q > 0 {
		return nil, fmt.Errorf("%w (%d cosignatures on a checkpoint of %d entries or more)", ErrAwaitingWitnesses, q, anchored)
	}
	return nil, nil
}

// Of is a confirmed evidence's receipt, built by receipt.Build from what
// the store holds: version 3 when its anchors commit to checkpoints of the
// evidence log, 2 for anchors of a batch's own root, 1 for evidence taken
// in before salts.
func Of(ctx context.Context, st Rows, ev store.Evidence) (receipt.Receipt, error) {
	rows := receipt.Rows{EvidenceID: ev.ID, Digest: ev.Digest, Salt: ev.Salt}
	var sizes []uint64
	for _, a := range ev.Anchors {
		if a.Status != store.StatusConfirmed {
			continue
		}
		rows.Anchors = append(rows.Anchors, receipt.AnchorRow{
			Chain: a.Chain, Network: a.Network, TxRef: a.TxRef, Block: a.Block, BlockTime: a.BlockTime, BlockHash: a.BlockHash,
			Finality: a.Finality, Account: a.Account, LogSize: a.LogSize, Root: a.Root,
			BatchID: a.BatchID, LeafIndex: a.LeafIndex, BatchSize: a.TreeSize,
		})
		if a.LogSize > 0 {
			sizes = append(sizes, a.LogSize)
		}
	}
	if len(sizes) > 0 {
		idx, ok, err := st.LogIndexOf(ctx, ev.ID)
		if err != nil {
			return receipt.Receipt{}, err
		}
		rows.LogIndex, rows.InLog = idx, ok
		if rows.LogKey, err = st.LogKey(ctx); err != nil {
			return receipt.Receipt{}, err
		}
		k, err := evlog.ParseKey(rows.LogKey)
		if err != nil {
			return receipt.Receipt{}, fmt.Errorf("the log's key: %w", err)
		}
		rows.LogOrigin = k.Name
		if rows.Head, err = head(ctx, st, slices.Max(sizes)); err != nil {
			return receipt.Receipt{}, err
		}
		if rows.Head == nil {
			if rows.Checkpoints, err = st.CheckpointsAt(ctx, sizes); err != nil {
				return receipt.Receipt{}, err
			}
		}
	}
	return receipt.Build(ctx, rows, st)
}
