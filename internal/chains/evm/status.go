package evm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
)

// found is what one status call learnt about one transaction with a receipt.
type found struct {
	receipt   rpcReceipt
	canonical *rpcHeader // the canonical block at the receipt's height, when it was asked in this call
	latest    uint64
	finalized *uint64 // nil: the node reported no finalized block
}

// maxTrackedHeights bounds the height cache (hashes seen with a receipt but
// not yet final); past it the cache starts over, costing one extra round.
const maxTrackedHeights = 100_000

// Status implements chains.Adapter. It looks up the receipts of every
// transaction journaled for the batch through the adapter's poller.
//
//   - a receipt with status 0: Failed;
//   - a receipt with status 1 whose block is still canonical and at or below
//     the finalized block (or Confirmations deep): Final;
//   - any other receipt: Pending (a reorganised block's receipt stays Pending
//     until the transaction lands again);
//   - no receipt, latest transaction signed less than ResubmitTimeout ago: Pending;
//   - no receipt after that: Dropped, and the workflow's next Submit bumps fees;
//   - with BlockTime set, no receipt and unknown to the node DropBlocks block
//     times after it was signed: Dropped as well (drop.go).
func (a *Adapter) Status(ctx context.Context, batchID int64, j chains.Journal) (chains.Status, error) {
	st, err := a.status(ctx, batchID, j)
	if err != nil {
		return chains.Status{}, a.fail(fmt.Errorf("etherlink: status: %w", err))
	}
	return st, nil
}

func (a *Adapter) status(ctx context.Context, batchID int64, j chains.Journal) (chains.Status, error) {
	recs, _, err := a.journaled(ctx, j, batchID)
	if err != nil {
		return chains.Status{}, err
	}
	if len(recs) == 0 {
		return chains.Status{}, retry.Permanent(errors.New("no transaction journaled for the batch"))
	}
	ids := make([]string, 0, len(recs))
	for _, h := range refHashes(recs) {
		ids = append(ids, h.Hex())
	}
	res, err := a.poller.Check(ctx, ids, recs[0].CreatedAt)
	if err != nil {
		return chains.Status{}, err
	}

	var pending *chains.Status
	for i := len(recs) - 1; i >= 0; i-- {
		f, ok := res[common.HexToHash(recs[i].Ref).Hex()]
		if !ok {
			continue
		}
		r := f.receipt
		st := chains.Status{State: chains.Pending, Ref: recs[i].Ref, Block: uint64(r.BlockNumber)}
		if f.canonical != nil && f.canonical.Hash == r.BlockHash {
			st.BlockTime = time.Unix(int64(f.canonical.Timestamp), 0).UTC()
		}
		if !r.succeeded() {
			st.State = chains.Failed
			st.Detail = fmt.Sprintf("transaction %s reverted (receipt status 0) in block %d", recs[i].Ref, r.BlockNumber)
			a.forget(batchID, ids)
			return st, nil
		}
		if a.final(f) {
			st.State = chains.Final
			st.BlockHash = r.BlockHash.Hex()
			st.Finality = a.finality()
			a.forget(batchID, ids)
			return st, nil
		}
		if pending == nil {
			st.Detail = a.pendingDetail(f)
			pending = &st
		}
	}
	if pending != nil {
		return *pending, nil
	}
	last := recs[len(recs)-1]
	since := last.CreatedAt
	a.hmu.Lock()
	if t, ok := a.resent[batchID]; ok && t.After(since) {
		since = t
	}
	a.hmu.Unlock()
	if age := a.now().Sub(since); age >= a.cfg.ResubmitTimeout {
		return chains.Status{State: chains.Dropped, Ref: last.Ref,
			Detail: fmt.Sprintf("no receipt for %s %s after it was signed or last resent (resubmit timeout %s)", last.Ref, age.Round(time.Millisecond), a.cfg.ResubmitTimeout)}, nil
	}
	if a.vanished(ctx, last.Ref, since) {
		return chains.Status{State: chains.Dropped, Ref: last.Ref,
			Detail: fmt.Sprintf("the node does not know %s %s after it was signed or last resent (dropped silently, e.g. underpriced; %d blocks of %s)",
				last.Ref, a.now().Sub(since).Round(time.Millisecond), DropBlocks, a.cfg.BlockTime)}, nil
	}
	return chains.Status{State: chains.Pending, Ref: last.Ref, Detail: "no receipt yet"}, nil
}

// finality names the rule final applies, for receipts.
func (a *Adapter) finality() string {
	if a.cfg.Confirmations > 0 {
		return fmt.Sprintf("confirmations:%d", a.cfg.Confirmations)
	}
	return "finalized"
}

// final applies the finality rule to a successful receipt.
func (a *Adapter) final(f found) bool {
	r := f.receipt
	if f.canonical == nil || f.canonical.Hash != r.BlockHash {
		return false // height not checked yet, or the block was reorganised away
	}
	n := uint64(r.BlockNumber)
	if a.cfg.Confirmations > 0 {
		return n+a.cfg.Confirmations-1 <= f.latest
	}
	return f.finalized != nil && n <= *f.finalized
}

func (a *Adapter) pendingDetail(f found) string {
	r := f.receipt
	switch {
	case f.canonical == nil:
		return fmt.Sprintf("included in block %d; checking it is canonical", r.BlockNumber)
	case f.canonical.Hash != r.BlockHash:
		return fmt.Sprintf("block %d was reorganised (receipt block %s, canonical %s)", r.BlockNumber, r.BlockHash.Hex(), f.canonical.Hash.Hex())
	case a.cfg.Confirmations > 0:
		return fmt.Sprintf("included in block %d, latest %d, waiting for %d confirmations", r.BlockNumber, f.latest, a.cfg.Confirmations)
	case f.finalized == nil:
		return fmt.Sprintf("included in block %d; the node reports no finalized block", r.BlockNumber)
	}
	return fmt.Sprintf("included in block %d, finalized %d", r.BlockNumber, *f.finalized)
}

func (a *Adapter) forget(batchID int64, ids []string) {
	a.hmu.Lock()
	defer a.hmu.Unlock()
	for _, id := range ids {
		delete(a.heights, id)
	}
	delete(a.resent, batchID)
}

// lookup is the poller's batched call: ONE JSON-RPC batch request holding
// the latest block, the finalized block (unless Confirmations is set), the
// receipt of every id, and the canonical block at every height where an id had
// a receipt in an earlier round (so canonicity is checked without a second
// request; a new receipt becomes final one round later at the earliest).
func (a *Adapter) lookup(ctx context.Context, ids []string) (map[string]found, error) {
	var latest, fin *rpcHeader
	elems := []rpc.BatchElem{headerElem("latest", &latest)}
	finIdx := -1
	if a.cfg.Confirmations == 0 {
		finIdx = len(elems)
		elems = append(elems, headerElem("finalized", &fin))
	}
	recStart := len(elems)
	receipts := make([]*rpcReceipt, len(ids))
	for i, id := range ids {
		elems = append(elems, receiptElem(common.HexToHash(id), &receipts[i]))
	}
	a.hmu.Lock()
	heightIdx := map[uint64]int{}
	var heights []uint64
	for _, id := range ids {
		if h, ok := a.heights[id]; ok {
			if _, dup := heightIdx[h]; !dup {
				heightIdx[h] = len(heights)
				heights = append(heights, h)
			}
		}
	}
	a.hmu.Unlock()
	hdrStart := len(elems)
	hdrs := make([]*rpcHeader, len(heights))
	for i, h := range heights {
		elems = append(elems, headerElem(blockArg(h), &hdrs[i]))
	}

	a.batches.Add(1)
	if err := a.rc.BatchCallContext(ctx, elems); err != nil {
		return nil, a.fail(fmt.Errorf("status batch call: %w", err))
	}
	if elems[0].Error != nil || latest == nil {
		return nil, a.fail(fmt.Errorf("status batch call: latest block: %v", elems[0].Error))
	}
	var finalized *uint64
	if finIdx >= 0 {
		if elems[finIdx].Error == nil && fin != nil {
			n := uint64(fin.Number)
			finalized = &n
		} else {
			a.finWarn.Do(func() {
				a.log.Warn("node reports no finalized block; nothing becomes final until it does (set Confirmations for nodes without the tag)",
					"error", a.scrub.text(fmt.Sprint(elems[finIdx].Error)))
			})
		}
	}

	if finIdx >= 0 {
		a.observeFinality(uint64(latest.Number), finalized)
	}

	out := make(map[string]found, len(ids))
	a.hmu.Lock()
	defer a.hmu.Unlock()
	if len(a.heights) > maxTrackedHeights {
		a.heights = map[string]uint64{}
	}
	if len(a.resent) > maxTrackedHeights {
		a.resent = map[int64]time.Time{}
	}
	for i, id := range ids {
		if elems[recStart+i].Error != nil || receipts[i] == nil {
			// No receipt (or the node could not say, e.g. while indexing): pending.
			delete(a.heights, id)
			continue
		}
		r := receipts[i]
		f := found{receipt: *r, latest: uint64(latest.Number), finalized: finalized}
		if k, ok := heightIdx[uint64(r.BlockNumber)]; ok && elems[hdrStart+k].Error == nil && hdrs[k] != nil {
			f.canonical = hdrs[k]
		}
		a.heights[id] = uint64(r.BlockNumber)
		out[id] = f
	}
	return out, nil
}
