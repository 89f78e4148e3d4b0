package solana

import (
	"context"
	"fmt"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// anchoredLookback bounds how many of the payer's latest transactions
// LatestCheckpoints reads back for a checkpoint anchor.
const anchoredLookback = 64

// LatestCheckpoints implements chains.AnchorReader: the checkpoint the
// payer's latest log anchor commits to, read from the chain alone, or none
// when its last anchoredLookback transactions carry none.
func (a *Adapter) LatestCheckpoints(ctx context.Context) ([]receipt.CheckpointRef, error) {
	limit := anchoredLookback
	sigs, err := a.client.GetSignaturesForAddressWithOpts(ctx, a.pub, &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		return nil, fmt.Errorf("solana: getSignaturesForAddress: %w", err)
	}
	version := uint64(0)
	for _, s := range sigs {
		if s.Err != nil {
			continue
		}
		res, err := a.client.GetTransaction(ctx, s.Signature, &rpc.GetTransactionOpts{
			Encoding: sol.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &version,
		})
		if err != nil {
			return nil, fmt.Errorf("solana: getTransaction %s: %w", s.Signature, err)
		}
		if res == nil || res.Transaction == nil {
			continue
		}
		tx, err := res.Transaction.GetTransaction()
		if err != nil {
			continue
		}
		for _, p := range verify.MemoPayloads(tx) {
			if p.Checkpoint != nil {
				return []receipt.CheckpointRef{*p.Checkpoint}, nil
			}
		}
	}
	return nil, nil
}
