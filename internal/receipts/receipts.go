// Package receipts builds a confirmed evidence's receipt (the receipt/
// format) from keeper's records: what GET /v1/evidence/{id}/receipt
// answers, what the evidence's own view and the receipts archive hold, and
// what a reward epoch's manifest shows for the evidence that anchors its
// commitment.
package receipts

import (
	"context"
	"fmt"

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
		if rows.Checkpoints, err = st.CheckpointsAt(ctx, sizes); err != nil {
			return receipt.Receipt{}, err
		}
	}
	return receipt.Build(ctx, rows, st)
}
