package solana

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt"
)

// txMeta is what the journal keeps about a signed transaction besides its
// wire bytes.
type txMeta struct {
	Blockhash            string `json:"blockhash"`
	LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
	// ComputeUnitPrice is the priority fee the transaction pays, in
	// micro-lamports per compute unit (0: none; also journals from before
	// it was recorded). A re-sign outbids it.
	ComputeUnitPrice uint64 `json:"computeUnitPrice"`
}

// record is a journaled transaction of this chain with its decoded meta.
type record struct {
	chains.TxRecord
	meta txMeta
}

// records loads the batch's solana transactions, oldest first.
func (a *Adapter) records(ctx context.Context, batchID int64, j chains.Journal) ([]record, error) {
	recs, err := j.Transactions(ctx, batchID)
	if err != nil {
		return nil, fmt.Errorf("solana: load transactions of batch %d: %w", batchID, err)
	}
	var out []record
	for _, r := range recs {
		if r.Chain != "" && r.Chain != Name {
			continue
		}
		var m txMeta
		if err := json.Unmarshal(r.Meta, &m); err != nil || m.Blockhash == "" || m.LastValidBlockHeight == 0 {
			return nil, retry.Permanent(fmt.Errorf("solana: journal of batch %d: transaction %s has no valid blockhash meta", batchID, r.Ref))
		}
		if _, err := sol.SignatureFromBase58(r.Ref); err != nil || len(r.Raw) == 0 {
			return nil, retry.Permanent(fmt.Errorf("solana: journal of batch %d: record %q is not a signed solana transaction", batchID, r.Ref))
		}
		out = append(out, record{TxRecord: r, meta: m})
	}
	return out, nil
}

// Submit implements chains.Adapter. With no journaled transaction it signs a
// new one on a fresh blockhash, journals it and sends it. With one whose
// blockhash can still land it rebroadcasts the same bytes. When the finalized
// block height has passed the last one's lastValidBlockHeight it returns the
// signature the chain has seen, or, if none was ever seen, signs anew.
func (a *Adapter) Submit(ctx context.Context, an chains.Anchor, j chains.Journal) (string, error) {
	unlock := a.lockBatch(an.BatchID)
	defer unlock()

	recs, err := a.records(ctx, an.BatchID, j)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		if an, err = an.Advanced(ctx); err != nil {
			return "", fmt.Errorf("solana: %w", err)
		}
		return a.signAndSend(ctx, an, j, nil)
	}

	last := recs[len(recs)-1]
	advanced, err := checkJournaledRoot(last, an)
	if err != nil {
		return "", err
	}
	height, err := a.blockHeight(ctx)
	if err != nil {
		return "", err
	}
	if advanced && height <= last.meta.LastValidBlockHeight {
		return "", fmt.Errorf("solana: batch %d moved to a newer checkpoint while its transaction %s can still land: it is re-signed once the finalized block height passes %d",
			an.BatchID, last.Ref, last.meta.LastValidBlockHeight)
	}
	if height <= last.meta.LastValidBlockHeight {
		// The journaled transaction can still land: send the same bytes.
		err := a.send(ctx, last.Raw)
		switch classifySend(err) {
		case sendOK, sendAlreadyProcessed:
			return last.Ref, nil
		case sendBlockhashExpired:
			// The node's tip is past the blockhash; it may have landed before.
			if ref, seen, serr := a.seen(ctx, recs); serr == nil && seen {
				return ref, nil
			}
			return "", fmt.Errorf("solana: transaction %s of batch %d: blockhash expired at the node; it is re-signed once the finalized block height passes %d",
				last.Ref, an.BatchID, last.meta.LastValidBlockHeight)
		}
		return "", a.sendError(last.Ref, err)
	}

	// Every journaled blockhash has expired (finalized height is past it), so
	// none of them can land any more. This lookup is made after the height
	// was read and searches history: if it has not seen a signature, that
	// transaction never landed.
	ref, seen, err := a.seen(ctx, recs)
	if err != nil {
		return "", err
	}
	if seen && advanced {
		// Moved on only after every transaction was seen to expire unseen.
		return "", retry.Permanent(fmt.Errorf("solana: batch %d's transaction %s landed after the batch moved to a newer checkpoint", an.BatchID, ref))
	}
	if seen {
		return ref, nil
	}
	a.log.Info("solana: blockhash expired unseen; re-signing", "batch", an.BatchID, "expired", last.Ref,
		"last_valid_block_height", last.meta.LastValidBlockHeight, "block_height", height,
		"expired_compute_unit_price", last.meta.ComputeUnitPrice)
	if an, err = an.Advanced(ctx); err != nil {
		return "", fmt.Errorf("solana: %w", err)
	}
	a.forget(recs)
	return a.signAndSend(ctx, an, j, &last.meta)
}

// checkJournaledRoot makes sure the journaled transaction anchors what is
// being submitted, or, advanced, an older checkpoint of the same log for
// the same batch: one the batch moved on from (chains.Anchor.Advance)
// before its new transaction was journaled. Anything else is a journal
// that cannot be trusted.
func checkJournaledRoot(r record, an chains.Anchor) (advanced bool, err error) {
	tx, err := sol.TransactionFromBytes(r.Raw)
	if err != nil {
		return false, retry.Permanent(fmt.Errorf("solana: journal of batch %d: transaction %s does not decode", an.BatchID, r.Ref))
	}
	memos, err := anchorMemos(tx)
	if err != nil || len(memos) != 1 || tx.Signatures[0].String() != r.Ref {
		return false, retry.Permanent(fmt.Errorf("solana: journal of batch %d: transaction %s is not one anchor", an.BatchID, r.Ref))
	}
	if memos[0] == an.Memo() {
		return false, nil
	}
	if p, err := receipt.ParseSolanaPayload(memos[0]); err == nil && an.MovedOnFrom(p) &&
		memos[0] == receipt.SolanaCheckpointMemoForBatch(*p.Checkpoint, an.BatchID) {
		return true, nil
	}
	return false, retry.Permanent(fmt.Errorf("solana: journal of batch %d: transaction %s does not anchor root %x", an.BatchID, r.Ref, an.Root))
}

// signAndSend builds a new transaction, journals it and sends it. expired
// is the meta of the batch's transaction whose blockhash expired unseen, nil
// for the batch's first: a re-sign skips the blockhash cache and pays more
// (computeUnitPrice).
func (a *Adapter) signAndSend(ctx context.Context, an chains.Anchor, j chains.Journal, expired *txMeta) (string, error) {
	var prev *uint64
	if expired != nil {
		prev = &expired.ComputeUnitPrice
	}
	price, err := a.computeUnitPrice(ctx, prev)
	if err != nil {
		return "", fmt.Errorf("solana: price anchor of batch %d: %w", an.BatchID, err)
	}
	hash, lastValid, err := a.latestBlockhash(ctx, expired != nil)
	if err != nil {
		return "", err
	}
	tx, raw, err := BuildAnchorTx(a.payer, an.Memo(), hash, price)
	if err != nil {
		return "", retry.Permanent(err)
	}
	ref := tx.Signatures[0].String()
	meta, err := json.Marshal(txMeta{Blockhash: hash.String(), LastValidBlockHeight: lastValid, ComputeUnitPrice: price})
	if err != nil {
		return "", retry.Permanent(err)
	}
	rec := chains.TxRecord{BatchID: an.BatchID, Chain: Name, Ref: ref, Raw: raw, Meta: meta, CreatedAt: a.now()}
	if err := j.SaveTransaction(ctx, rec); err != nil {
		return "", fmt.Errorf("solana: journal transaction of batch %d: %w", an.BatchID, err)
	}
	switch err := a.send(ctx, raw); classifySend(err) {
	case sendOK, sendAlreadyProcessed:
		return ref, nil
	case sendBlockhashExpired:
		// The cached blockhash went stale (slots skipped); fetch anew next time.
		a.mu.Lock()
		if a.hash.hash == hash {
			a.hash = cachedHash{}
		}
		a.mu.Unlock()
		return "", a.sendError(ref, err)
	default:
		return "", a.sendError(ref, err)
	}
}

// send broadcasts raw once (maxRetries 0: the adapter rebroadcasts itself)
// with preflight checks at confirmed commitment, where its blockhash is from.
func (a *Adapter) send(ctx context.Context, raw []byte) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	zero := uint(0)
	_, err := a.client.SendRawTransactionWithOpts(ctx, raw, rpc.TransactionOpts{
		SkipPreflight:       false,
		PreflightCommitment: rpc.CommitmentConfirmed,
		MaxRetries:          &zero,
	})
	if id := signatureOf(raw); id != "" {
		a.mu.Lock()
		a.sent[id] = a.now()
		a.mu.Unlock()
	}
	return err
}

// signatureOf returns the first signature of a wire transaction.
func signatureOf(raw []byte) string {
	// compact-u16 signature count, then 64-byte signatures
	if len(raw) < 1+64 || raw[0] == 0 || raw[0]&0x80 != 0 {
		return ""
	}
	return sol.SignatureFromBytes(raw[1:65]).String()
}

// latestBlockhash returns a recent blockhash (confirmed) and its
// lastValidBlockHeight, reusing one fetched less than blockhashReuse ago
// unless fresh.
func (a *Adapter) latestBlockhash(ctx context.Context, fresh bool) (sol.Hash, uint64, error) {
	now := a.now()
	a.mu.Lock()
	c := a.hash
	a.mu.Unlock()
	if !fresh && !c.at.IsZero() && now.Sub(c.at) < blockhashReuse {
		return c.hash, c.lastValid, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	out, err := a.client.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return sol.Hash{}, 0, a.rpcErr("getLatestBlockhash", err)
	}
	if out == nil || out.Value == nil || out.Value.Blockhash.IsZero() {
		return sol.Hash{}, 0, errors.New("solana: getLatestBlockhash: empty answer")
	}
	a.mu.Lock()
	if a.hash.at.Before(now) {
		a.hash = cachedHash{hash: out.Value.Blockhash, lastValid: out.Value.LastValidBlockHeight, at: now}
	}
	a.mu.Unlock()
	return out.Value.Blockhash, out.Value.LastValidBlockHeight, nil
}

// blockHeight is the finalized block height, read directly (Submit).
func (a *Adapter) blockHeight(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	h, err := a.client.GetBlockHeight(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return 0, a.rpcErr("getBlockHeight", err)
	}
	return h, nil
}

// seen asks directly whether the chain has ever seen any of recs'
// signatures (searching history, not only the recent status cache) and
// returns the best one: succeeded over failed, newest first.
func (a *Adapter) seen(ctx context.Context, recs []record) (string, bool, error) {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Ref
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	st, err := a.lookupHistory(ctx, ids)
	if err != nil {
		return "", false, err
	}
	var failed string
	for i := len(recs) - 1; i >= 0; i-- {
		s, ok := st[recs[i].Ref]
		if !ok {
			continue
		}
		if s.Err == nil {
			return recs[i].Ref, true, nil
		}
		failed = cmp.Or(failed, recs[i].Ref)
	}
	return failed, failed != "", nil
}

// forget drops rebroadcast bookkeeping of recs.
func (a *Adapter) forget(recs []record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range recs {
		delete(a.sent, r.Ref)
	}
}

// lastSent is when ref was last broadcast by this process.
func (a *Adapter) lastSent(ref string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.sent[ref]
	return t, ok
}
