package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// solanaPage is how many signatures one getSignaturesForAddress answers
// (the RPC's most).
const solanaPage = 1000

// solanaReader reads Solana: an account's whole finalized history
// (getSignaturesForAddress, paged back to its first transaction, so no
// number of others' transactions can push the account's own out of
// sight), and each transaction whose memo carries a checkpoint
// (getTransaction), which counts only when the account paid for it and
// signed it (notOwn).
type solanaReader struct {
	name   string
	client *rpc.Client
	caip2  string
}

func newSolanaReader(ctx context.Context, c Chain, _ Options) (reader, error) {
	client := rpc.New(c.RPC)
	genesis, err := client.GetGenesisHash(ctx)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("%s: getGenesisHash: %w", c.Name, err)
	}
	return &solanaReader{name: c.Name, client: client, caip2: receipt.SolanaNetwork(genesis.String())}, nil
}

func (s *solanaReader) close() { s.client.Close() }

func (s *solanaReader) network() string { return s.caip2 }

func (s *solanaReader) read(ctx context.Context, account string, listed []evlog.Anchor, r *Report) ([]Anchored, error) {
	pk, err := sol.PublicKeyFromBase58(account)
	if err != nil {
		return nil, fmt.Errorf("account %q is not a Solana address", account)
	}
	byRef := map[string]evlog.Anchor{}
	for _, a := range listed {
		if a.Network != "" && a.Network != s.caip2 {
			r.find(KindAnchor, s.name, "keeper lists tx %s on network %s, and the node is on %s", a.TxRef, a.Network, s.caip2)
		}
		byRef[strings.TrimPrefix(a.TxRef, "solana:")] = a
	}
	history, err := s.history(ctx, pk)
	if err != nil {
		return nil, err
	}
	var out []Anchored
	seen := map[string]bool{}
	for i, h := range history {
		ref := h.Signature.String()
		a, isListed := byRef[ref]
		seen[ref] = true
		if h.Err != nil {
			if isListed {
				r.find(KindAnchor, s.name, "keeper lists tx %s, which failed", ref)
			}
			continue
		}
		// The memo the node reports picks the candidates; the transaction decides.
		if !isListed && (h.Memo == nil || !strings.Contains(*h.Memo, receipt.PayloadPrefixCheckpoint)) {
			continue
		}
		got, err := s.anchorsOf(ctx, pk, h.Signature, len(history)-i, isListed, r)
		if err != nil {
			return nil, err
		}
		if isListed {
			checkListedSolana(s.name, a, got, r)
		}
		out = append(out, got...)
	}
	for ref, a := range byRef {
		if seen[ref] {
			continue
		}
		sig, err := sol.SignatureFromBase58(ref)
		if err != nil {
			r.find(KindAnchor, s.name, "keeper lists %q, which is not a transaction signature", a.TxRef)
			continue
		}
		got, err := s.anchorsOf(ctx, pk, sig, 0, true, r)
		if err != nil {
			return nil, err
		}
		if len(got) > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: tx %s is not in %s's finalized history yet; audited on its own", s.name, ref, pk))
			checkListedSolana(s.name, a, got, r)
		}
		out = append(out, got...)
	}
	return out, nil
}

// history is the account's finalized transactions, newest first.
func (s *solanaReader) history(ctx context.Context, pk sol.PublicKey) ([]*rpc.TransactionSignature, error) {
	var out []*rpc.TransactionSignature
	var before sol.Signature
	for {
		limit := solanaPage
		page, err := s.client.GetSignaturesForAddressWithOpts(ctx, pk, &rpc.GetSignaturesForAddressOpts{
			Limit: &limit, Before: before, Commitment: rpc.CommitmentFinalized})
		if err != nil {
			return nil, fmt.Errorf("getSignaturesForAddress %s: %w", pk, err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out, nil
		}
		before = page[len(page)-1].Signature
	}
}

// anchorsOf reads one transaction and returns the checkpoints its memos
// commit to when the account paid for it. listed transactions that are
// missing, failed or paid by another account are findings.
func (s *solanaReader) anchorsOf(ctx context.Context, pk sol.PublicKey, sig sol.Signature, index int, listed bool, r *Report) ([]Anchored, error) {
	maxVersion := uint64(0)
	res, err := s.client.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		Encoding: sol.EncodingBase64, Commitment: rpc.CommitmentFinalized, MaxSupportedTransactionVersion: &maxVersion})
	if errors.Is(err, rpc.ErrNotFound) {
		if listed {
			r.find(KindAnchor, s.name, "keeper lists tx %s, which the node does not have (finalized)", sig)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getTransaction %s: %w", sig, err)
	}
	if res.Transaction == nil {
		return nil, fmt.Errorf("getTransaction %s: the node returned no transaction", sig)
	}
	tx, err := chainread.DecodeSolanaTransaction(res.Transaction.GetBinary())
	if err != nil {
		return nil, fmt.Errorf("getTransaction %s: %w", sig, err)
	}
	if res.Meta == nil || res.Meta.Err != nil {
		if listed {
			r.find(KindAnchor, s.name, "keeper lists tx %s, which failed", sig)
		}
		return nil, nil
	}
	if why := notOwn(tx, sig, pk); why != "" {
		if listed {
			r.find(KindAnchor, s.name, "keeper lists tx %s, which %s", sig, why)
		}
		return nil, nil
	}
	var out []Anchored
	for _, memo := range tx.Memos() {
		p, err := receipt.ParseSolanaPayload(string(memo))
		if err != nil || p.Checkpoint == nil {
			continue
		}
		out = append(out, Anchored{Chain: s.name, Account: pk.String(), TxRef: sig.String(), Block: res.Slot, Index: index, Ref: *p.Checkpoint})
	}
	if len(out) == 0 && listed {
		r.find(KindAnchor, s.name, "keeper lists tx %s as an anchor, and it commits to no checkpoint", sig)
	}
	return out, nil
}

// notOwn says why tx, read under sig, is not a transaction the account
// sent ("" when it is): chainread's rule, as every verifier's.
func notOwn(tx chainread.SolanaTransaction, sig sol.Signature, pk sol.PublicKey) string {
	if err := tx.SentBy(sig, pk.String()); err != nil {
		return err.Error()
	}
	return ""
}

// checkListedSolana compares an anchor keeper lists with what its
// transaction commits to on chain.
func checkListedSolana(chain string, a evlog.Anchor, got []Anchored, r *Report) {
	for _, g := range got {
		if g.Ref.Size == a.Size {
			if g.Block != a.Block {
				r.find(KindAnchor, chain, "keeper lists tx %s in slot %d, and it is in slot %d", a.TxRef, a.Block, g.Block)
			}
			return
		}
	}
	if len(got) > 0 {
		r.find(KindAnchor, chain, "keeper lists tx %s as an anchor of %d entries, and it commits to %d", a.TxRef, a.Size, got[0].Ref.Size)
	}
}
