package evm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
)

// GasMarginPercent is added to eth_estimateGas's answer.
const GasMarginPercent = 20

// nonceMemory is how long the adapter trusts its own count of the signer's
// next nonce over the node's: eth_getTransactionCount(pending) can lag a
// broadcast the node just accepted (geth promotes pooled transactions
// asynchronously; behind a load balancer another backend may answer), and
// does not count one whose answer never came but which may be pooled. The
// memory is short so that a transaction the node later evicts leaves no
// lasting nonce gap.
const nonceMemory = 30 * time.Second

// txMeta is the journal's Meta for one signed transaction.
type txMeta struct {
	Nonce                uint64 `json:"nonce"`
	Gas                  uint64 `json:"gas"`
	MaxFeePerGas         string `json:"max_fee_per_gas"`
	MaxPriorityFeePerGas string `json:"max_priority_fee_per_gas"`
	From                 string `json:"from"`
	To                   string `json:"to"`
	// Reason: "new" (first transaction of the batch), "fee_bump" (same nonce,
	// higher fees after ResubmitTimeout), "nonce_taken" (the nonce was used by
	// another transaction: signed anew on a fresh nonce), "signer_changed".
	Reason string `json:"reason"`
}

// Submit implements chains.Adapter. Under the signer's mutex it either signs,
// journals and broadcasts the batch's first transaction, or works from the
// journaled ones: returns one that has a receipt, rebroadcasts the latest, or
// re-signs it on the same nonce with higher fees once ResubmitTimeout passed.
func (a *Adapter) Submit(ctx context.Context, an chains.Anchor, j chains.Journal) (string, error) {
	ref, err := a.submit(ctx, an, j)
	if err != nil {
		return "", a.fail(fmt.Errorf("etherlink: %w", err))
	}
	return ref, nil
}

func (a *Adapter) submit(ctx context.Context, an chains.Anchor, j chains.Journal) (string, error) {
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-a.sem }()
	if err := a.Stopped(); err != nil {
		return "", retry.Permanent(err)
	}
	if a.xlock != nil {
		if err := a.xlock.lock(ctx); err != nil {
			return "", err
		}
		defer a.xlock.unlock()
		if next, at := a.xlock.load(); next > a.nextNonce && a.now().Sub(at) < nonceMemory {
			a.nextNonce, a.nextNonceAt = next, at
		}
		defer func() {
			if err := a.xlock.store(a.nextNonce, a.nextNonceAt); err != nil {
				a.log.Warn("etherlink: could not record the next nonce", "file", a.xlock.path, "error", err)
			}
		}()
	}

	recs, txs, err := a.journaled(ctx, j, an.BatchID)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return a.signOwnNonce(ctx, an, j, "new")
	}
	last, lastTx := recs[len(recs)-1], txs[len(txs)-1]
	movedOn := false
	if !bytes.Equal(lastTx.Data(), an.Calldata()) {
		p, err := ParsePayload(lastTx.Data())
		if movedOn = err == nil && an.MovedOnFrom(p); !movedOn {
			return "", retry.Permanent(fmt.Errorf("journaled transaction %s does not carry the batch's anchor (root %x)", last.Ref, an.Root))
		}
	}
	if ref, ok, err := a.minedRef(ctx, recs); err != nil || ok {
		if ok && movedOn {
			// Moved on only after another anchor took its nonce.
			return "", retry.Permanent(fmt.Errorf("batch %d's transaction %s was mined after the batch moved to a newer checkpoint", an.BatchID, ref))
		}
		return ref, err
	}
	if movedOn {
		// Moved on when another anchor took its nonce, and stopped before
		// the new transaction was journaled.
		return a.signOwnNonce(ctx, an, j, "nonce_taken")
	}
	if a.now().Sub(last.CreatedAt) >= a.cfg.ResubmitTimeout || a.vanished(ctx, last.Ref, a.lastSent(an.BatchID, last.CreatedAt)) {
		if sender, err := types.Sender(a.signer, lastTx); err != nil || sender != a.from {
			a.log.Warn("journaled transaction was signed by another key; signing anew", "batch", an.BatchID, "ref", last.Ref)
			return a.signNew(ctx, an, j, "signer_changed")
		}
		gap, err := a.fillGap(ctx, j, lastTx.Nonce())
		if err != nil {
			return "", err
		}
		if gap {
			// This one waits behind the gap whatever its fees.
			a.log.Info("rebroadcasting a transaction that waits behind a nonce gap instead of bumping it",
				"batch", an.BatchID, "ref", last.Ref, "nonce", lastTx.Nonce())
			a.markResent(an.BatchID)
			return a.afterSend(ctx, an, j, last.Ref, lastTx.Nonce(), a.send(ctx, last.Raw), false)
		}
		return a.bump(ctx, an, j, last.Ref, lastTx)
	}
	a.log.Debug("rebroadcasting journaled transaction", "batch", an.BatchID, "ref", last.Ref, "nonce", lastTx.Nonce())
	return a.afterSend(ctx, an, j, last.Ref, lastTx.Nonce(), a.send(ctx, last.Raw), false)
}

// journaled loads the batch's records on this chain and decodes them.
func (a *Adapter) journaled(ctx context.Context, j chains.Journal, batchID int64) ([]chains.TxRecord, []*types.Transaction, error) {
	all, err := j.Transactions(ctx, batchID)
	if err != nil {
		return nil, nil, fmt.Errorf("load journal: %w", err)
	}
	var recs []chains.TxRecord
	var txs []*types.Transaction
	for _, r := range all {
		if r.Chain != Name && r.Chain != "" {
			continue
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(r.Raw); err != nil {
			return nil, nil, retry.Permanent(fmt.Errorf("journaled transaction %s does not decode: %w", r.Ref, err))
		}
		recs = append(recs, r)
		txs = append(txs, tx)
	}
	return recs, txs, nil
}

// minedRef returns the ref of a journaled transaction that has a receipt.
func (a *Adapter) minedRef(ctx context.Context, recs []chains.TxRecord) (string, bool, error) {
	got, _, err := a.minedReceipts(ctx, refHashes(recs))
	if err != nil {
		return "", false, err
	}
	ref, ok := pickMined(recs, got)
	return ref, ok, nil
}

func pickMined(recs []chains.TxRecord, got map[common.Hash]*rpcReceipt) (string, bool) {
	var failed string
	for i := len(recs) - 1; i >= 0; i-- {
		r, ok := got[common.HexToHash(recs[i].Ref)]
		if !ok {
			continue
		}
		if r.succeeded() {
			return recs[i].Ref, true
		}
		failed = cmp.Or(failed, recs[i].Ref)
	}
	return failed, failed != ""
}

func refHashes(recs []chains.TxRecord) []common.Hash {
	out := make([]common.Hash, 0, len(recs))
	seen := map[common.Hash]bool{}
	for _, r := range recs {
		h := common.HexToHash(r.Ref)
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// signOwnNonce signs the batch's anchor on a nonce of its own, none of its
// transactions being able to land: the first, or after another anchor took
// their nonce. It moves the batch to the log's newest checkpoint first
// (chains.Anchor.Advance), under the signer's lock, so nonces follow the
// sizes of the trees anchored.
func (a *Adapter) signOwnNonce(ctx context.Context, an chains.Anchor, j chains.Journal, reason string) (string, error) {
	an, err := an.Advanced(ctx)
	if err != nil {
		return "", err
	}
	return a.signNew(ctx, an, j, reason)
}

// signNew signs the batch's anchor on the signer's pending nonce with market fees.
func (a *Adapter) signNew(ctx context.Context, an chains.Anchor, j chains.Journal, reason string) (string, error) {
	m, err := a.market(ctx, an.Calldata(), true)
	if err != nil {
		return "", err
	}
	tip, feeCap := a.capFees(m.tip, m.feeCap, m.baseFee)
	nonce := m.nonce
	if a.now().Sub(a.nextNonceAt) < nonceMemory && a.nextNonce > nonce {
		nonce = a.nextNonce
	}
	tx, err := a.sign(an, nonce, m.gas, tip, feeCap)
	if err != nil {
		return "", err
	}
	if tx, err = a.pastIdentical(ctx, an, j, tx); err != nil {
		return "", err
	}
	return a.saveSend(ctx, an, j, tx, reason)
}

// maxIdentical bounds how many nonces pastIdentical moves up.
const maxIdentical = 64

// pastIdentical re-signs tx on the next nonce for as long as another batch
// journaled this very transaction. Two batches that commit to one checkpoint
// carry the same calldata, so on one nonce and at one price they sign the
// same bytes: when the first one's broadcast never reached the node (its
// nonce still reads as pending) and keeper forgot it had used that nonce
// (a restart, or the memory ran out), the second would take the first's
// transaction for its own, and one transaction would stand for two batches.
func (a *Adapter) pastIdentical(ctx context.Context, an chains.Anchor, j chains.Journal, tx *types.Transaction) (*types.Transaction, error) {
	if an.Checkpoint == nil {
		return tx, nil // a batch root is the batch's own
	}
	recs, err := j.Unconfirmed(ctx, Name)
	if err != nil {
		return nil, fmt.Errorf("load journal: %w", err)
	}
	others := map[common.Hash]int64{}
	for _, r := range recs {
		if r.BatchID != an.BatchID {
			others[common.HexToHash(r.Ref)] = r.BatchID
		}
	}
	for range maxIdentical {
		other, ok := others[tx.Hash()]
		if !ok {
			return tx, nil
		}
		a.log.Warn("another batch journaled this very transaction (same checkpoint, nonce and fees); signing on the next nonce",
			"batch", an.BatchID, "other_batch", other, "ref", tx.Hash().Hex(), "nonce", tx.Nonce())
		if tx, err = a.sign(an, tx.Nonce()+1, tx.Gas(), tx.GasTipCap(), tx.GasFeeCap()); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("batch %d: the journal holds other batches' transactions identical to this one on %d nonces in a row", an.BatchID, maxIdentical)
}

// bump re-signs old on its nonce with both fee caps raised by at least 10 %
// (and 1 wei), or to today's market fees if higher, capped by FeeCeiling.
//
// With NoTip the tip stays 0 (the sequencer ignores it, and keeps no pool
// whose replacement rule would ask for more) and the gas limit is estimated
// again: EtherLink's estimate carries the inclusion fee at today's price.
func (a *Adapter) bump(ctx context.Context, an chains.Anchor, j chains.Journal, oldRef string, old *types.Transaction) (string, error) {
	m, err := a.market(ctx, an.Calldata(), a.cfg.NoTip)
	if err != nil {
		return "", err
	}
	gas := old.Gas()
	tip := maxBig(bumped(old.GasTipCap()), m.tip)
	if a.cfg.NoTip {
		gas = max(gas, m.gas)
		tip = new(big.Int)
	}
	feeCap := maxBig(bumped(old.GasFeeCap()), m.feeCap)
	tip, feeCap = a.capFees(tip, feeCap, m.baseFee)
	if (!a.cfg.NoTip && tip.Cmp(bumped(old.GasTipCap())) < 0) || feeCap.Cmp(bumped(old.GasFeeCap())) < 0 {
		// A replacement needs +10 % on both caps; at the ceiling there is no
		// room, so keep the journaled transaction in the pool instead.
		a.log.Warn("fee ceiling reached: cannot bump the stuck transaction, rebroadcasting it",
			"batch", an.BatchID, "ref", oldRef, "max_fee_per_gas", old.GasFeeCap().String(), "fee_ceiling", a.cfg.FeeCeiling.String())
		raw, err := old.MarshalBinary()
		if err != nil {
			return "", err
		}
		a.markResent(an.BatchID)
		return a.afterSend(ctx, an, j, oldRef, old.Nonce(), a.send(ctx, raw), false)
	}
	a.log.Info("bumping fees of a transaction without receipt", "batch", an.BatchID, "ref", oldRef, "nonce", old.Nonce(),
		"old_max_fee_per_gas", old.GasFeeCap().String(), "max_fee_per_gas", feeCap.String(),
		"old_max_priority_fee_per_gas", old.GasTipCap().String(), "max_priority_fee_per_gas", tip.String())
	return a.signSaveSend(ctx, an, j, old.Nonce(), gas, tip, feeCap, "fee_bump")
}

// lastSent is when the batch's latest transaction was signed (at) or last
// rebroadcast, whichever is later.
func (a *Adapter) lastSent(batchID int64, at time.Time) time.Time {
	a.hmu.Lock()
	defer a.hmu.Unlock()
	if t, ok := a.resent[batchID]; ok && t.After(at) {
		return t
	}
	return at
}

// markResent makes Status wait another ResubmitTimeout before it reports the
// batch Dropped again: its transaction was rebroadcast rather than re-signed.
func (a *Adapter) markResent(batchID int64) {
	a.hmu.Lock()
	a.resent[batchID] = a.now()
	a.hmu.Unlock()
}

// signSaveSend signs, journals (before anything reaches the network) and broadcasts.
func (a *Adapter) signSaveSend(ctx context.Context, an chains.Anchor, j chains.Journal, nonce, gas uint64, tip, feeCap *big.Int, reason string) (string, error) {
	tx, err := a.sign(an, nonce, gas, tip, feeCap)
	if err != nil {
		return "", err
	}
	return a.saveSend(ctx, an, j, tx, reason)
}

// sign signs the batch's anchor transaction.
func (a *Adapter) sign(an chains.Anchor, nonce, gas uint64, tip, feeCap *big.Int) (*types.Transaction, error) {
	to := a.to
	signed, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{
		ChainID:   a.chainID,
		Nonce:     nonce,
		GasTipCap: tip,
		GasFeeCap: feeCap,
		Gas:       gas,
		To:        &to,
		Value:     new(big.Int),
		Data:      an.Calldata(),
	}), a.signer, a.key)
	if err != nil {
		return nil, retry.Permanent(errors.New("sign transaction: the signer rejected it")) // never wrap: key material stays out
	}
	return signed, nil
}

// saveSend journals a signed transaction (before anything reaches the
// network) and broadcasts it.
func (a *Adapter) saveSend(ctx context.Context, an chains.Anchor, j chains.Journal, signed *types.Transaction, reason string) (string, error) {
	raw, err := signed.MarshalBinary()
	if err != nil {
		return "", err
	}
	ref := signed.Hash().Hex()
	nonce, gas, tip, feeCap := signed.Nonce(), signed.Gas(), signed.GasTipCap(), signed.GasFeeCap()
	meta, err := json.Marshal(txMeta{
		Nonce: nonce, Gas: gas, MaxFeePerGas: feeCap.String(), MaxPriorityFeePerGas: tip.String(),
		From: a.from.Hex(), To: a.to.Hex(), Reason: reason,
	})
	if err != nil {
		return "", err
	}
	rec := chains.TxRecord{BatchID: an.BatchID, Chain: Name, Ref: ref, Raw: raw, Meta: meta, CreatedAt: a.now()}
	if err := j.SaveTransaction(ctx, rec); err != nil {
		return "", fmt.Errorf("journal transaction %s: %w", ref, err)
	}
	a.log.Info("journaled anchor transaction", "batch", an.BatchID, "ref", ref, "nonce", nonce, "gas", gas,
		"max_fee_per_gas", feeCap.String(), "max_priority_fee_per_gas", tip.String(), "reason", reason)
	return a.afterSend(ctx, an, j, ref, nonce, a.send(ctx, raw), reason != "fee_bump")
}

func (a *Adapter) send(ctx context.Context, raw []byte) error {
	return a.rc.CallContext(ctx, nil, "eth_sendRawTransaction", hexutil.Encode(raw))
}

type sendKind int

const (
	sendOK sendKind = iota
	sendKnown
	sendUnderpriced
	sendNonceTooLow
	sendRejected // permanent
	sendFailed   // transient
)

// classifySend sorts a broadcast error by the messages of geth, anvil and
// other common nodes.
func classifySend(err error) sendKind {
	if err == nil {
		return sendOK
	}
	var rpcErr rpc.Error
	var httpErr rpc.HTTPError
	if !errors.As(err, &rpcErr) && !errors.As(err, &httpErr) {
		return sendFailed // transport, context: nothing was said about the transaction
	}
	m := strings.ToLower(err.Error())
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(m, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("already known", "already imported", "known transaction", "alreadyknown", "already in the mempool", "already exists"):
		return sendKnown
	case has("replacement transaction underpriced", "replacement fee too low", "replacementunderpriced"):
		return sendUnderpriced
	case has("nonce too low", "noncetoolow", "oldnonce", "nonce has already been used", "invalid nonce"):
		return sendNonceTooLow
	case has("invalid sender", "invalid chain id", "chain id mismatch", "incorrect chain id", "invalid signature",
		"transaction type not supported", "tx type not supported", "exceeds block gas limit", "intrinsic gas too low",
		"oversized data", "max priority fee per gas higher than max fee per gas", "tip higher than fee cap", "gas uint64 overflow"):
		return sendRejected
	}
	return sendFailed
}

// afterSend turns a broadcast's answer into Submit's. fresh says the
// transaction was signed on a nonce just read from the node.
func (a *Adapter) afterSend(ctx context.Context, an chains.Anchor, j chains.Journal, ref string, nonce uint64, err error, fresh bool) (string, error) {
	switch kind := classifySend(err); kind {
	case sendOK, sendKnown, sendFailed:
		// A broadcast that failed without a word on the transaction (a
		// timeout, a dropped connection, a node's internal error) may have
		// reached the pool; either way the journal holds it and the batch's
		// retry rebroadcasts it. The next batch signs on the nonce after it.
		if nonce+1 >= a.nextNonce || a.now().Sub(a.nextNonceAt) >= nonceMemory {
			a.nextNonce, a.nextNonceAt = nonce+1, a.now()
		}
		if kind != sendFailed {
			return ref, nil
		}
	case sendUnderpriced:
		// Another transaction with this nonce is pooled (an earlier one of
		// this batch, or a bump the pool did not take): it stands.
		a.log.Info("an equal-nonce transaction is already pooled", "batch", an.BatchID, "ref", ref, "nonce", nonce)
		return ref, nil
	case sendNonceTooLow:
		recs, _, lerr := a.journaled(ctx, j, an.BatchID)
		if lerr != nil {
			return "", lerr
		}
		got, chainNonce, lerr := a.minedReceipts(ctx, refHashes(recs))
		if lerr != nil {
			return "", lerr
		}
		if mined, ok := pickMined(recs, got); ok {
			return mined, nil
		}
		if chainNonce <= nonce {
			return "", fmt.Errorf("node answered %q for nonce %d but the chain's nonce is %d; will retry", err, nonce, chainNonce)
		}
		if fresh {
			return "", fmt.Errorf("nonce %d was taken by another transaction while signing; a retry signs anew", nonce)
		}
		return a.nonceTaken(ctx, an, j, recs, ref, nonce, chainNonce)
	case sendRejected:
		return "", retry.Permanent(fmt.Errorf("node rejected transaction %s: %w", ref, err))
	}
	return "", fmt.Errorf("broadcast %s: %w", ref, err)
}

// nonceTaken handles a nonce of the batch that was mined without any of the
// batch's receipts showing it: it reads the transaction that took the nonce.
// One of the batch's own (whose receipt the node failed to give) is the
// batch's anchor; another keeper anchor (a batch signed on the nonce after
// this one's broadcast was lost) means this batch is signed anew on a fresh
// nonce; anything else was signed with keeper's key by someone else, and
// keeper stops the signer rather than guess which nonces are still its own.
func (a *Adapter) nonceTaken(ctx context.Context, an chains.Anchor, j chains.Journal, recs []chains.TxRecord, ref string, nonce, chainNonce uint64) (string, error) {
	taker, err := a.nonceTaker(ctx, nonce)
	if err != nil {
		return "", fmt.Errorf("nonce %d is below the chain's nonce %d but none of the batch's transactions has a receipt, and the transaction that took it was not found: %w", nonce, chainNonce, err)
	}
	for _, r := range recs {
		if common.HexToHash(r.Ref) == taker.Hash {
			a.log.Warn("the node gave no receipt for a mined transaction; found it in its block", "batch", an.BatchID, "ref", r.Ref, "nonce", nonce)
			return r.Ref, nil
		}
	}
	if _, perr := ParsePayload(taker.Input); perr != nil {
		return "", a.stop(fmt.Errorf("signer %s stopped: transaction %s at nonce %d, journaled for batch %d, was replaced by %s, which keeper never signed (the node's nonce is %d): the key is used outside keeper",
			a.from.Hex(), ref, nonce, an.BatchID, taker.Hash.Hex(), chainNonce))
	}
	a.log.Warn("nonce used by another keeper anchor; signing anew on a fresh nonce",
		"batch", an.BatchID, "ref", ref, "nonce", nonce, "chain_nonce", chainNonce, "taken_by", taker.Hash.Hex())
	return a.signOwnNonce(ctx, an, j, "nonce_taken")
}

type market struct {
	tip, feeCap, baseFee *big.Int
	gas, nonce           uint64
}

// market reads fees (and, when full, gas and the pending nonce) in one batch call.
func (a *Adapter) market(ctx context.Context, data []byte, full bool) (market, error) {
	var (
		head       *rpcHeader
		tip, price hexutil.Big
		gas, nonce hexutil.Uint64
	)
	elems := []rpc.BatchElem{
		headerElem("latest", &head),
		{Method: "eth_maxPriorityFeePerGas", Result: &tip},
		{Method: "eth_gasPrice", Result: &price},
	}
	if full {
		elems = append(elems,
			rpc.BatchElem{Method: "eth_estimateGas", Args: []any{callArgs{From: a.from, To: a.to, Data: data, Value: new(hexutil.Big)}}, Result: &gas},
			rpc.BatchElem{Method: "eth_getTransactionCount", Args: []any{a.from, "pending"}, Result: &nonce},
		)
	}
	if err := a.rc.BatchCallContext(ctx, elems); err != nil {
		return market{}, fmt.Errorf("read fees: %w", err)
	}
	if elems[0].Error != nil || head == nil {
		return market{}, fmt.Errorf("read latest block: %v", elems[0].Error)
	}
	m := market{baseFee: bigOf(head.BaseFee)}
	switch {
	case elems[1].Error == nil:
		m.tip = new(big.Int).Set((*big.Int)(&tip))
	case elems[2].Error == nil: // node without eth_maxPriorityFeePerGas
		m.tip = new(big.Int).Set((*big.Int)(&price))
		if m.baseFee != nil {
			m.tip.Sub(m.tip, m.baseFee)
			if m.tip.Sign() < 0 {
				m.tip.SetInt64(0)
			}
		}
	default:
		return market{}, fmt.Errorf("read fees: eth_maxPriorityFeePerGas: %v; eth_gasPrice: %v", elems[1].Error, elems[2].Error)
	}
	base := m.baseFee
	if base == nil { // no base fee reported: price the cap on the gas price
		base = (*big.Int)(&price)
		if elems[2].Error != nil {
			base = m.tip
		}
	}
	if a.cfg.NoTip {
		// The tip buys nothing; the base fee is the node's current price,
		// doubled as headroom for a base fee that rises before inclusion
		// (a transaction pays the base fee only, so headroom costs nothing).
		if elems[2].Error == nil {
			base = maxBig(base, (*big.Int)(&price))
		}
		m.tip = new(big.Int)
	}
	m.feeCap = new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), m.tip)
	if full {
		if elems[3].Error != nil {
			return market{}, fmt.Errorf("eth_estimateGas: %w", elems[3].Error)
		}
		if elems[4].Error != nil {
			return market{}, fmt.Errorf("pending nonce: %w", elems[4].Error)
		}
		m.gas = uint64(gas) + uint64(gas)*GasMarginPercent/100
		m.nonce = uint64(nonce)
	}
	return m, nil
}

// capFees applies FeeCeiling to the max fee and keeps tip ≤ max fee.
func (a *Adapter) capFees(tip, feeCap, baseFee *big.Int) (*big.Int, *big.Int) {
	feeCap = minBig(feeCap, a.cfg.FeeCeiling)
	tip = minBig(tip, feeCap)
	if baseFee != nil && feeCap.Cmp(baseFee) < 0 {
		a.log.Warn("fee ceiling is below the base fee: the transaction waits until the base fee falls",
			"fee_ceiling", a.cfg.FeeCeiling.String(), "base_fee", baseFee.String())
	}
	return tip, feeCap
}

// bumped is x raised by 10 %, rounded up, and by at least 1 wei.
func bumped(x *big.Int) *big.Int {
	inc := new(big.Int).Add(x, big.NewInt(9))
	inc.Div(inc, big.NewInt(10))
	if inc.Sign() == 0 {
		inc.SetInt64(1)
	}
	return inc.Add(inc, x)
}

func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}

func minBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) <= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}
