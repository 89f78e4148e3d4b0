package solana

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
)

// levels orders confirmation statuses.
var levels = map[rpc.ConfirmationStatusType]int{
	rpc.ConfirmationStatusProcessed: 1,
	rpc.ConfirmationStatusConfirmed: 2,
	rpc.ConfirmationStatusFinalized: 3,
}

// level is how far a seen signature got. Old nodes leave confirmationStatus
// out; a null confirmations count then means rooted.
func level(s rpc.SignatureStatusesResult) int {
	if l, ok := levels[s.ConfirmationStatus]; ok {
		return l
	}
	if s.Confirmations == nil {
		return levels[rpc.ConfirmationStatusFinalized]
	}
	return levels[rpc.ConfirmationStatusProcessed]
}

// heightKey is the one id the height poller asks for.
const heightKey = "finalized"

// lookupStatuses is the status poller's batched call: one
// getSignatureStatuses for ids (at most 256) in the node's recent status
// cache, without searching history.
func (a *Adapter) lookupStatuses(ctx context.Context, ids []string) (map[string]rpc.SignatureStatusesResult, error) {
	return a.signatureStatuses(ctx, ids, false)
}

// lookupHistory is the history poller's batched call: like lookupStatuses,
// but also searching the ledger for signatures older than the status cache.
// It is asked only once a blockhash expired without its signature in the
// cache, before the batch may be signed again.
func (a *Adapter) lookupHistory(ctx context.Context, ids []string) (map[string]rpc.SignatureStatusesResult, error) {
	return a.signatureStatuses(ctx, ids, true)
}

// signatureStatuses makes one getSignatureStatuses call. Only non-null
// answers are returned; the answer is matched to ids by position and must be
// exactly as long.
func (a *Adapter) signatureStatuses(ctx context.Context, ids []string, history bool) (map[string]rpc.SignatureStatusesResult, error) {
	sigs := make([]sol.Signature, 0, len(ids))
	asked := make([]string, 0, len(ids))
	for _, id := range ids {
		s, err := sol.SignatureFromBase58(id)
		if err != nil {
			continue // not a signature: never seen
		}
		sigs = append(sigs, s)
		asked = append(asked, id)
	}
	out := make(map[string]rpc.SignatureStatusesResult, len(asked))
	if len(sigs) == 0 {
		return out, nil
	}
	res, err := a.client.GetSignatureStatuses(ctx, history, sigs...)
	if err != nil {
		return nil, a.rpcErr("getSignatureStatuses", err)
	}
	if len(res.Value) != len(asked) {
		return nil, fmt.Errorf("solana: getSignatureStatuses answered %d statuses for %d signatures", len(res.Value), len(asked))
	}
	for i, v := range res.Value {
		if v != nil {
			out[asked[i]] = *v
		}
	}
	return out, nil
}

// lookupHeight is the height poller's call: the finalized block height.
func (a *Adapter) lookupHeight(ctx context.Context, _ []string) (map[string]uint64, error) {
	h, err := a.client.GetBlockHeight(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return nil, a.rpcErr("getBlockHeight", err)
	}
	return map[string]uint64{heightKey: h}, nil
}

// Status implements chains.Adapter. It looks up every signature journaled for
// the batch in the next poll round. A signature that reached the configured
// commitment is Final (or Failed, when its transaction errored). While none
// was seen and the last blockhash is valid, the last transaction is
// rebroadcast every RebroadcastInterval and the answer is Pending; once the
// finalized block height has passed its lastValidBlockHeight and a lookup
// after that, searching history too, still has not seen any, the answer is
// Dropped. (Submit checks again before it signs anew.)
func (a *Adapter) Status(ctx context.Context, batchID int64, j chains.Journal) (chains.Status, error) {
	recs, err := a.records(ctx, batchID, j)
	if err != nil {
		return chains.Status{}, err
	}
	if len(recs) == 0 {
		return chains.Status{}, retry.Permanent(fmt.Errorf("solana: batch %d has no transaction", batchID))
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Ref
	}

	found, err := a.statusP.Check(ctx, ids, recs[0].CreatedAt)
	if err != nil {
		return chains.Status{}, a.wrapPollErr(err)
	}
	if st, ok := a.decide(ctx, recs, found); ok {
		return st, nil
	}

	// Not seen. Is the last blockhash still valid?
	last := recs[len(recs)-1]
	hs, err := a.heightP.Check(ctx, []string{heightKey}, time.Time{})
	if err != nil {
		return chains.Status{}, a.wrapPollErr(err)
	}
	height, ok := hs[heightKey]
	if !ok {
		return chains.Status{State: chains.Pending, Ref: last.Ref, Detail: "block height unknown"}, nil
	}
	if height <= maxLastValid(recs) {
		a.rebroadcast(ctx, batchID, last, height)
		return chains.Status{State: chains.Pending, Ref: last.Ref, Detail: "not yet seen by the chain"}, nil
	}

	// Expired. Confirm with a lookup made after the height was read that
	// also searches history: a worker that was away longer than the status
	// cache (about 300 slots) must still find an anchor that landed.
	found, err = a.historyP.Check(ctx, ids, recs[0].CreatedAt)
	if err != nil {
		return chains.Status{}, a.wrapPollErr(err)
	}
	if st, ok := a.decide(ctx, recs, found); ok {
		return st, nil
	}
	a.forget(recs)
	return chains.Status{
		State: chains.Dropped,
		Ref:   last.Ref,
		Detail: fmt.Sprintf("blockhash %s expired unseen: finalized block height %d passed last valid block height %d",
			last.meta.Blockhash, height, last.meta.LastValidBlockHeight),
	}, nil
}

func (a *Adapter) wrapPollErr(err error) error {
	var re *rpcError
	if errors.As(err, &re) {
		return err
	}
	return fmt.Errorf("solana: status poll: %w", err)
}

func maxLastValid(recs []record) uint64 {
	var m uint64
	for _, r := range recs {
		m = max(m, r.meta.LastValidBlockHeight)
	}
	return m
}

// decide turns the statuses seen for recs into an answer, if any was seen:
// a succeeded one at the commitment is Final; else a succeeded one below it
// is Pending; else a failed one at the commitment is Failed (below it,
// Pending).
func (a *Adapter) decide(ctx context.Context, recs []record, found map[string]rpc.SignatureStatusesResult) (chains.Status, bool) {
	var pending, failed, failedPending *chains.Status
	for i := len(recs) - 1; i >= 0; i-- {
		ref := recs[i].Ref
		s, ok := found[ref]
		if !ok {
			continue
		}
		reached := level(s) >= a.final
		switch {
		case s.Err == nil && reached:
			b, err := a.blockOf(ctx, s.Slot)
			if err != nil {
				a.log.Warn("solana: block of a final anchor", "slot", s.Slot, "error", err)
				return chains.Status{State: chains.Pending, Ref: ref, Block: s.Slot, Detail: "final; block time and hash not yet known"}, true
			}
			a.forget(recs)
			return chains.Status{State: chains.Final, Ref: ref, Block: s.Slot, BlockTime: b.time, BlockHash: b.hash, Finality: a.cfg.Commitment}, true
		case s.Err == nil:
			if pending == nil {
				pending = &chains.Status{State: chains.Pending, Ref: ref, Block: s.Slot, Detail: "seen: " + string(s.ConfirmationStatus)}
			}
		case reached:
			if failed == nil {
				failed = &chains.Status{State: chains.Failed, Ref: ref, Block: s.Slot, Detail: errText(s.Err)}
			}
		default:
			if failedPending == nil {
				failedPending = &chains.Status{State: chains.Pending, Ref: ref, Block: s.Slot, Detail: "seen failing (" + errText(s.Err) + "), not yet " + a.cfg.Commitment}
			}
		}
	}
	for _, st := range []*chains.Status{pending, failed, failedPending} {
		if st != nil {
			if st.State == chains.Failed {
				a.forget(recs)
			}
			return *st, true
		}
	}
	return chains.Status{}, false
}

func errText(e any) string {
	if s, ok := e.(string); ok {
		return s
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Sprint(e)
	}
	return string(b)
}

// rebroadcast sends last again when it was not sent within
// RebroadcastInterval.
func (a *Adapter) rebroadcast(ctx context.Context, batchID int64, last record, height uint64) {
	if t, ok := a.lastSent(last.Ref); ok && a.now().Sub(t) < a.cfg.RebroadcastInterval {
		return
	}
	err := a.send(ctx, last.Raw)
	switch classifySend(err) {
	case sendOK, sendAlreadyProcessed:
		a.log.Debug("solana: rebroadcast", "batch", batchID, "signature", last.Ref, "block_height", height,
			"last_valid_block_height", last.meta.LastValidBlockHeight)
	default:
		a.log.Debug("solana: rebroadcast failed", "batch", batchID, "signature", last.Ref, "error", a.rpcErr("sendTransaction", err))
	}
}

// block is what a receipt names of a final anchor's slot.
type block struct {
	time time.Time
	hash string // base58 blockhash
}

// blockOf reads a slot's time and blockhash with one getBlock call (no
// transactions, no rewards), remembering recent slots.
func (a *Adapter) blockOf(ctx context.Context, slot uint64) (block, error) {
	a.mu.Lock()
	b, ok := a.blocks[slot]
	a.mu.Unlock()
	if ok {
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	noRewards, maxVersion := false, uint64(0)
	res, err := a.client.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{
		TransactionDetails:             rpc.TransactionDetailsNone,
		Rewards:                        &noRewards,
		Commitment:                     rpc.CommitmentConfirmed,
		MaxSupportedTransactionVersion: &maxVersion,
	})
	if err != nil {
		return block{}, a.rpcErr("getBlock", err)
	}
	if res == nil || res.BlockTime == nil {
		return block{}, fmt.Errorf("solana: getBlock: no time for slot %d", slot)
	}
	b = block{time: res.BlockTime.Time().UTC(), hash: res.Blockhash.String()}
	a.mu.Lock()
	if len(a.blocks) >= 4096 {
		clear(a.blocks)
	}
	a.blocks[slot] = b
	a.mu.Unlock()
	return b, nil
}
