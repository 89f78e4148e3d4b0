package evm

import (
	"context"

	"github.com/keeperhq/keeper/receipt"
)

// anchoredLookback bounds how many of the signer's latest transactions
// LatestCheckpoints reads back for a checkpoint anchor.
const anchoredLookback = 64

// LatestCheckpoints implements chains.AnchorReader: the checkpoint the
// signer's latest log anchor commits to, read from the chain alone (the
// transactions at its last nonces, found by binary search over blocks),
// or none when its last anchoredLookback transactions carry none.
func (a *Adapter) LatestCheckpoints(ctx context.Context) ([]receipt.CheckpointRef, error) {
	n, err := a.nonceAt(ctx, "latest")
	if err != nil {
		return nil, err
	}
	for k := n; k > 0 && n-k < anchoredLookback; k-- {
		tx, err := a.nonceTaker(ctx, k-1)
		if err != nil {
			return nil, err
		}
		if p, err := ParsePayload(tx.Input); err == nil && p.Checkpoint != nil {
			return []receipt.CheckpointRef{*p.Checkpoint}, nil
		}
	}
	return nil, nil
}
