package evm

import (
	"context"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/keeperhq/keeper/receipt"
)

// anchoredLookback bounds how many of the signer's latest transactions
// LatestCheckpoints reads back for a checkpoint anchor. A count suffices
// here, unlike on Solana: only the signer's key fills its nonces, so no
// one else's transactions can push keeper's anchors out of them.
const anchoredLookback = 64

// LatestCheckpoints implements chains.AnchorReader: the checkpoint the
// signer's latest log anchor commits to, read from the chain alone (the
// transactions at its last nonces, found by binary search over blocks),
// or none when its last anchoredLookback transactions carry none.
//
// Only the signer's own transactions count: what others send to its
// address, whatever its calldata claims, holds none of its nonces, and a
// transaction read back counts only when the sender recovered from its
// signature here is the signer (signedBy), not the node's word for it
// (docs/log.md, "Checkpoints").
func (a *Adapter) LatestCheckpoints(ctx context.Context) ([]receipt.CheckpointRef, error) {
	n, err := a.nonceAt(ctx, "latest")
	if err != nil {
		return nil, err
	}
	for k := n; k > 0 && n-k < anchoredLookback; k-- {
		found, err := a.nonceTaker(ctx, k-1)
		if err != nil {
			return nil, err
		}
		tx := a.signedBy(found)
		if tx == nil {
			continue
		}
		if p, err := ParsePayload(tx.Data()); err == nil && p.Checkpoint != nil {
			return []receipt.CheckpointRef{*p.Checkpoint}, nil
		}
	}
	return nil, nil
}

// signedBy rebuilds the signed transaction from the block's listing of it
// and returns it when its hash and nonce are the listing's and the sender
// recovered from its signature is the signer; nil when not.
func (a *Adapter) signedBy(found blockTx) *types.Transaction {
	tx := new(types.Transaction)
	if tx.UnmarshalJSON(found.raw) != nil || tx.Hash() != found.Hash || tx.Nonce() != uint64(found.Nonce) {
		return nil
	}
	if from, err := types.Sender(a.signer, tx); err != nil || from != a.from {
		return nil
	}
	return tx
}
