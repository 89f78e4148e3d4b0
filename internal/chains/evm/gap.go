package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
)

// A nonce gap: the node mines a signer's transactions in nonce order, so when
// it lost one of them (restarted without its pool, a provider failed over to a
// node that never saw it, EtherLink dropped it underpriced) every later nonce
// waits behind it, and bumping the fees of the later ones only churns the
// pool. The gap is filled from the journal: before a batch's transaction is
// fee-bumped, the journaled transaction of every lower nonce the node has not
// mined is rebroadcast, lowest first, whatever batch it belongs to; and when
// the node lacked one of them, the batch's own transaction is rebroadcast
// rather than bumped (lower nonces merely pooled behind low fees are no gap:
// then every stuck transaction is bumped as before).

// fillGap rebroadcasts the latest journaled transaction of the signer for
// every nonce from the node's `latest` nonce up to (not including) below. gap
// says a nonce in that range was missing from the node (it accepted the
// rebroadcast as new, or keeper journaled nothing on it).
func (a *Adapter) fillGap(ctx context.Context, j chains.Journal, below uint64) (gap bool, err error) {
	latest, err := a.nonceAt(ctx, "latest")
	if err != nil || latest >= below {
		return false, err
	}
	all, err := j.Unconfirmed(ctx, Name)
	if err != nil {
		return false, fmt.Errorf("load journal: %w", err)
	}
	// The newest record per nonce: a fee bump supersedes what it replaced.
	byNonce := map[uint64]chains.TxRecord{}
	for _, r := range all {
		tx := new(types.Transaction)
		if tx.UnmarshalBinary(r.Raw) != nil || tx.Nonce() < latest || tx.Nonce() >= below {
			continue
		}
		if from, err := types.Sender(a.signer, tx); err != nil || from != a.from {
			continue
		}
		if old, ok := byNonce[tx.Nonce()]; !ok || !r.CreatedAt.Before(old.CreatedAt) {
			byNonce[tx.Nonce()] = r
		}
	}
	nonces := make([]uint64, 0, len(byNonce))
	for n := range byNonce {
		nonces = append(nonces, n)
	}
	slices.Sort(nonces)
	gap = below-latest > uint64(len(nonces))
	for _, n := range nonces {
		g := byNonce[n]
		err := a.send(ctx, g.Raw)
		switch kind := classifySend(err); kind {
		case sendOK, sendKnown, sendUnderpriced, sendNonceTooLow: // pooled (again), or mined meanwhile
			if kind != sendOK {
				continue
			}
			gap = true
			a.gapFills.Add(1)
			a.markResent(g.BatchID) // its own batch gives it another ResubmitTimeout before bumping it
			a.log.Info("nonce gap: rebroadcast a journaled transaction", "batch", g.BatchID, "ref", g.Ref, "nonce", n)
		case sendFailed:
			return false, fmt.Errorf("rebroadcast %s (nonce %d) to fill a nonce gap: %w", g.Ref, n, err)
		default:
			a.log.Warn("nonce gap: the node refused a journaled transaction", "batch", g.BatchID, "ref", g.Ref, "nonce", n, a.errAttr(err))
		}
	}
	if gap {
		a.log.Warn("nonce gap: rebroadcast the journaled transactions of the node's missing nonces before any bump",
			"chain_nonce", latest, "below", below, "journaled", len(nonces), "not_journaled", below-latest-uint64(len(nonces)))
	}
	return gap, nil
}

func (a *Adapter) nonceAt(ctx context.Context, block string) (uint64, error) {
	var n hexutil.Uint64
	if err := a.rc.CallContext(ctx, &n, "eth_getTransactionCount", a.from, block); err != nil {
		return 0, fmt.Errorf("eth_getTransactionCount(%s): %w", block, err)
	}
	return uint64(n), nil
}

// blockTx is a transaction as a block with full transactions lists it.
type blockTx struct {
	Hash  common.Hash    `json:"hash"`
	From  common.Address `json:"from"` // the node's word for it
	Nonce hexutil.Uint64 `json:"nonce"`
	Input hexutil.Bytes  `json:"input"`
	raw   json.RawMessage
}

// UnmarshalJSON keeps the listing whole besides its fields, so the signed
// transaction can be rebuilt from it (signedBy).
func (b *blockTx) UnmarshalJSON(data []byte) error {
	type fields blockTx
	if err := json.Unmarshal(data, (*fields)(b)); err != nil {
		return err
	}
	b.raw = append(json.RawMessage(nil), data...)
	return nil
}

// nonceTaker finds the mined transaction of the signer at nonce (below
// chainNonce, the node's `latest` nonce): it searches back from the head for
// the block where the signer's nonce passed it, doubling the step (so a
// recent one is found within a pruned node's state window), then bisects.
func (a *Adapter) nonceTaker(ctx context.Context, nonce uint64) (blockTx, error) {
	head, err := a.head(ctx)
	if err != nil {
		return blockTx{}, err
	}
	tx, err := a.nonceTakerByState(ctx, head, nonce)
	if err == nil {
		return tx, nil
	}
	// A node that keeps recent state only (most do) cannot say the signer's
	// nonce at an older block; block bodies it always has.
	a.log.Debug("nonce taker: state lookups failed; reading block bodies back from the head", "nonce", nonce, a.errAttr(err))
	return a.nonceTakerByBodies(ctx, head, nonce)
}

// takerScanBlocks bounds how far back nonceTakerByBodies reads, and
// takerScanBatch how many blocks one JSON-RPC batch asks for.
const (
	takerScanBlocks = 20_000
	takerScanBatch  = 50
)

// nonceTakerByBodies reads blocks back from head until it finds the
// signer's transaction at nonce, or one of the signer's below it (then the
// nonce's is not there: the chain reorganised under the search).
func (a *Adapter) nonceTakerByBodies(ctx context.Context, head, nonce uint64) (blockTx, error) {
	type block struct {
		Transactions []blockTx `json:"transactions"`
	}
	for top := head; ; {
		n := min(uint64(takerScanBatch), top+1)
		blocks := make([]*block, n)
		elems := make([]rpc.BatchElem, n)
		for i := range elems {
			elems[i] = rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{blockArg(top - uint64(i)), true}, Result: &blocks[i]}
		}
		if err := a.rc.BatchCallContext(ctx, elems); err != nil {
			return blockTx{}, fmt.Errorf("read blocks %d–%d: %w", top+1-n, top, err)
		}
		for i, e := range elems {
			if e.Error != nil {
				return blockTx{}, fmt.Errorf("block %d: %w", top-uint64(i), e.Error)
			}
			if blocks[i] == nil {
				continue
			}
			// A block lists a sender's transactions in nonce order, so the
			// one sought can follow a lower one of the signer's in the same
			// block: look at every transaction before judging.
			lower := false
			for _, tx := range blocks[i].Transactions {
				if tx.From != a.from {
					continue
				}
				if uint64(tx.Nonce) == nonce {
					return tx, nil
				}
				lower = lower || uint64(tx.Nonce) < nonce
			}
			if lower {
				return blockTx{}, fmt.Errorf("the signer's nonce %d is mined, but no block from %d back to %d holds its transaction", nonce, head, top-uint64(i))
			}
		}
		if top < n || head-top+n >= takerScanBlocks {
			return blockTx{}, fmt.Errorf("no block from %d back to %d holds the signer's transaction at nonce %d", head, top+1-n, nonce)
		}
		top -= n
	}
}

// nonceTakerByState finds the block where the signer's nonce passed nonce
// from the node's state at older blocks.
func (a *Adapter) nonceTakerByState(ctx context.Context, head, nonce uint64) (blockTx, error) {
	// count(b) > nonce holds at hi; find the lowest such block.
	hi, lo := head, uint64(0)
	for step := uint64(1); hi > 0; step *= 2 {
		b := uint64(0)
		if hi > step {
			b = hi - step
		}
		n, err := a.nonceAt(ctx, blockArg(b))
		if err != nil {
			return blockTx{}, err
		}
		if n <= nonce {
			lo = b + 1
			break
		}
		hi = b
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		n, err := a.nonceAt(ctx, blockArg(mid))
		if err != nil {
			return blockTx{}, err
		}
		if n > nonce {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	var blk *struct {
		Transactions []blockTx `json:"transactions"`
	}
	if err := a.rc.CallContext(ctx, &blk, "eth_getBlockByNumber", blockArg(hi), true); err != nil {
		return blockTx{}, fmt.Errorf("block %d: %w", hi, err)
	}
	if blk != nil {
		for _, tx := range blk.Transactions {
			if tx.From == a.from && uint64(tx.Nonce) == nonce {
				return tx, nil
			}
		}
	}
	return blockTx{}, fmt.Errorf("block %d, where the signer's nonce passed %d, holds no transaction of the signer at that nonce", hi, nonce)
}

// stop refuses every further Submit of the signer and fails Ping: the key
// signs elsewhere too, and any nonce keeper picks may be taken again.
func (a *Adapter) stop(err error) error {
	a.stopped.CompareAndSwap(nil, &err)
	a.log.Error("etherlink signer stopped: its key is used by another sender; check the key and restart keeper", a.errAttr(err))
	return retry.Permanent(err)
}

// Stopped is the error that stopped the signer, or nil.
func (a *Adapter) Stopped() error {
	if p := a.stopped.Load(); p != nil {
		return *p
	}
	return nil
}

// NonceGapRebroadcasts counts journaled transactions rebroadcast to fill a nonce gap.
func (a *Adapter) NonceGapRebroadcasts() int64 { return a.gapFills.Load() }

// receiptRounds bounds how often Submit asks the node for receipts it answers
// with an error (not "null", which is "not mined"): a node whose transaction
// index points at a lost block errors on every lookup, and Submit then goes
// on as if those transactions were not mined. That is safe: it only ever
// re-signs on the same nonce, and "nonce too low" then finds what took it.
const receiptRounds = 3

// minedReceipts looks up receipts like receipts, asking again for up to
// receiptRounds rounds (a poll interval apart) while some lookup errors,
// then counting the erroring ones as not mined. A failed call (the node not
// reachable) is still an error.
func (a *Adapter) minedReceipts(ctx context.Context, hashes []common.Hash) (map[common.Hash]*rpcReceipt, uint64, error) {
	for round := 1; ; round++ {
		got, chainNonce, lookupErrs, err := a.receipts(ctx, hashes)
		if err != nil || len(lookupErrs) == 0 {
			return got, chainNonce, err
		}
		if round == receiptRounds {
			a.log.Warn("receipt lookups keep failing; counting those transactions as not mined", "rounds", round, a.errAttr(errors.Join(lookupErrs...)))
			return got, chainNonce, nil
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(min(a.cfg.PollInterval, time.Second)):
		}
	}
}
