package solana

import (
	"context"
	"errors"
	"slices"

	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// methodNotFound is JSON-RPC's code for a method the server does not have.
const methodNotFound = -32601

// How the compute unit price of an anchor is chosen (Config.PriorityFee and
// Config.MaxPriorityFee):
//
//   - MaxPriorityFee 0: every anchor pays exactly PriorityFee, re-signed ones
//     too (the fixed price of earlier versions).
//   - MaxPriorityFee above 0: a new anchor pays the FeePercentile-th
//     percentile of getRecentPrioritizationFees (the least price of each of
//     the last 150 blocks), at least PriorityFee; one re-signed after its
//     blockhash expired unseen pays at least ResignBumpPercent more than the
//     expired one did (ResignMinBump more when that is larger, so a zero
//     price rises too). Either way the price is capped at MaxPriorityFee.
//
// A price of 0 adds no compute budget instructions (see BuildAnchorTx).
const (
	// FeePercentile: each block's least price is what it took to get into
	// that block, so the 75th percentile is a price 3 of 4 recent blocks
	// would have taken. The median lands every other block at best under
	// congestion; the maximum pays for one block's spike for the whole
	// window. A memo anchor is in no hurry beyond its blockhash's ~60 s.
	FeePercentile = 75
	// ResignBumpPercent is how much more a re-signed anchor pays than the
	// one whose blockhash expired unseen: the market the percentile read was
	// not enough, so outbid it.
	ResignBumpPercent = 50
	// ResignMinBump (micro-lamports per compute unit) is the least raise of
	// a re-sign: 5 lamports an anchor at ComputeUnitLimit.
	ResignMinBump = 1_000
)

// computeUnitPrice is the price of the next transaction of a batch; prev is
// the price of the batch's expired transaction when re-signing, nil for the
// first one.
func (a *Adapter) computeUnitPrice(ctx context.Context, prev *uint64) (uint64, error) {
	if a.cfg.MaxPriorityFee == 0 {
		a.lastPrice.Store(a.cfg.PriorityFee)
		return a.cfg.PriorityFee, nil
	}
	market, err := a.recentFee(ctx)
	if err != nil {
		return 0, err
	}
	p := priceFor(a.cfg.PriorityFee, a.cfg.MaxPriorityFee, market, prev)
	a.lastPrice.Store(p)
	return p, nil
}

// PriorityFee is the compute unit price (micro-lamports) of the last
// anchor signed: keeper_chain_compute_unit_price_microlamports on /metrics.
func (a *Adapter) PriorityFee() uint64 { return a.lastPrice.Load() }

// priceFor combines the floor, the cap, the market price and the price of
// the expired transaction (nil: none) as the comment above says.
func priceFor(floor, ceiling, market uint64, prev *uint64) uint64 {
	p := max(floor, market)
	if prev != nil {
		bump := *prev/100*ResignBumpPercent + *prev%100*ResignBumpPercent/100 // no overflow
		p = max(p, *prev+max(bump, ResignMinBump))
	}
	return min(p, ceiling)
}

// recentFee is the FeePercentile-th percentile (nearest rank) of the prices
// getRecentPrioritizationFees reports for recent blocks; 0 when it reports
// none. No accounts are named: an anchor write-locks only its fee payer,
// which nobody else writes, so it competes for block space, not for an
// account, and the price of naming the payer would be keeper's own.
// A read serves the submits of the next blockhashReuse too (a burst of
// batches shares one call; rate-limited endpoints count every call).
func (a *Adapter) recentFee(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	if a.noFeeRead.Load() {
		return 0, nil
	}
	a.feeMu.Lock()
	defer a.feeMu.Unlock()
	if !a.feeAt.IsZero() && a.now().Sub(a.feeAt) < blockhashReuse {
		return a.fee, nil
	}
	out, err := a.client.GetRecentPrioritizationFees(ctx, nil)
	var re *jsonrpc.RPCError
	if errors.As(err, &re) && re.Code == methodNotFound {
		// A node or provider without the method (some proxies leave it
		// out): price from the floor and the re-sign bump alone, said once.
		if !a.noFeeRead.Swap(true) {
			a.log.Warn("solana: the node has no getRecentPrioritizationFees; anchors pay KEEPER_SOLANA_PRIORITY_FEE, raised on each re-sign")
		}
		return 0, nil
	}
	if err != nil {
		return 0, a.rpcErr("getRecentPrioritizationFees", err)
	}
	fees := make([]uint64, len(out))
	for i, f := range out {
		fees[i] = f.PrioritizationFee
	}
	a.fee, a.feeAt = percentile(fees, FeePercentile), a.now()
	return a.fee, nil
}

// percentile is the nearest-rank p-th percentile of xs (0 when empty).
func percentile(xs []uint64, p int) uint64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100 × n)
	return s[max(rank, 1)-1]
}
