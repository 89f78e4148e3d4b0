package solana

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/receipt"
)

// DefaultAnchorLookbackSlots is Config.AnchorLookbackSlots' default: 30
// days of slots at Solana's 400 ms slot target.
const DefaultAnchorLookbackSlots = 30 * 24 * 60 * 60 * 10 / 4

// signaturesPerPage is how many signatures one getSignaturesForAddress call
// asks for (the RPC's limit).
const signaturesPerPage = 1000

// LatestCheckpoints implements chains.AnchorReader: the checkpoint of the
// payer's latest log anchor, read from the chain alone, or none when the
// payer anchored none within the last AnchorLookbackSlots slots.
//
// Anyone can send a transaction that mentions the payer (a 1-lamport
// transfer with a memo that claims any checkpoint), so only the payer's own
// transactions count (ownAnchor), and the payer's signatures are paged back
// with `before`, past everything others sent, until keeper's latest anchor
// or the slot bound: however many transactions others send, none hides
// keeper's anchor and none stands for it (docs/log.md, "Checkpoints").
func (a *Adapter) LatestCheckpoints(ctx context.Context) ([]receipt.CheckpointRef, error) {
	tip, err := a.client.GetSlot(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return nil, fmt.Errorf("solana: getSlot: %w", err)
	}
	oldest := tip - min(tip, a.cfg.AnchorLookbackSlots)
	limit := a.sigPage
	opts := &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: rpc.CommitmentConfirmed}
	for {
		sigs, err := a.client.GetSignaturesForAddressWithOpts(ctx, a.pub, opts)
		if err != nil {
			return nil, fmt.Errorf("solana: getSignaturesForAddress: %w", err)
		}
		var claims []sol.Signature
		past := false
		for _, s := range sigs {
			if past = s.Slot < oldest; past {
				break
			}
			if s.Err == nil && claimsCheckpoint(s.Memo) {
				claims = append(claims, s.Signature)
			}
		}
		ref, ok, err := a.firstOwnAnchor(ctx, claims)
		if err != nil {
			return nil, err
		}
		if ok {
			return []receipt.CheckpointRef{ref}, nil
		}
		if past || len(sigs) < limit {
			return nil, nil
		}
		opts.Before = sigs[len(sigs)-1].Signature
	}
}

// claimsCheckpoint reports whether a transaction's memos, as
// getSignaturesForAddress lists them ("[len] text" joined by "; "), may
// hold a checkpoint anchor: only those are fetched, so a flood of plain
// transfers costs one call per page.
func claimsCheckpoint(memo *string) bool {
	return memo != nil && strings.Contains(*memo, receipt.PayloadPrefixCheckpoint)
}

// firstOwnAnchor returns the checkpoint of the first of sigs (newest
// first) that is keeper's own anchor. It fetches RPCConnections of them at
// a time: a flood of memos that claim checkpoints costs one getTransaction
// each, so they are read in parallel, and keeper's latest anchor, usually
// the first, is found in the first round.
func (a *Adapter) firstOwnAnchor(ctx context.Context, sigs []sol.Signature) (receipt.CheckpointRef, bool, error) {
	type found struct {
		ref receipt.CheckpointRef
		ok  bool
		err error
	}
	for len(sigs) > 0 {
		round := sigs[:min(len(sigs), a.cfg.RPCConnections)]
		sigs = sigs[len(round):]
		res := make([]found, len(round))
		var wg sync.WaitGroup
		for i, sig := range round {
			wg.Go(func() {
				res[i].ref, res[i].ok, res[i].err = a.ownAnchor(ctx, sig)
			})
		}
		wg.Wait()
		for _, r := range res {
			if r.err != nil || r.ok {
				return r.ref, r.ok, r.err
			}
		}
	}
	return receipt.CheckpointRef{}, false, nil
}

// ownAnchor fetches the transaction with signature sig and returns the
// checkpoint it anchors when it is keeper's own: it succeeded, the payer is
// its first account key (the fee payer) and a required signer, sig is its
// first signature and every signature verifies over its message, so neither
// a third party's transaction nor a node's forged answer counts.
func (a *Adapter) ownAnchor(ctx context.Context, sig sol.Signature) (receipt.CheckpointRef, bool, error) {
	version := uint64(0)
	res, err := a.client.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		Encoding: sol.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &version,
	})
	if errors.Is(err, rpc.ErrNotFound) {
		return receipt.CheckpointRef{}, false, nil
	}
	if err != nil {
		return receipt.CheckpointRef{}, false, fmt.Errorf("solana: getTransaction %s: %w", sig, err)
	}
	if res == nil || res.Transaction == nil || res.Meta == nil || res.Meta.Err != nil {
		return receipt.CheckpointRef{}, false, nil
	}
	tx, ok := a.signedAndPaid(res.Transaction.GetBinary(), sig)
	if !ok {
		return receipt.CheckpointRef{}, false, nil
	}
	for _, memo := range tx.Memos() {
		if p, err := receipt.ParseSolanaPayload(string(memo)); err == nil && p.Checkpoint != nil {
			return *p.Checkpoint, true, nil
		}
	}
	return receipt.CheckpointRef{}, false, nil
}

// signedAndPaid decodes the transaction listed under sig from its wire
// bytes by the verifiers' own rule (chainread: every signature verified)
// and reports whether the payer paid for it and signed it.
func (a *Adapter) signedAndPaid(wire []byte, sig sol.Signature) (chainread.SolanaTransaction, bool) {
	tx, err := chainread.DecodeSolanaTransaction(wire)
	if err != nil || tx.SentBy(sig, a.pub.String()) != nil {
		return chainread.SolanaTransaction{}, false
	}
	return tx, true
}
