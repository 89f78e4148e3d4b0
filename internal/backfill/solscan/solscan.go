// Package solscan reads a wallet's SOL history from a Solana JSON-RPC
// endpoint: getSignaturesForAddress, paged back from the finalized head to the
// last signature already stored, then getTransaction for each, oldest first.
// What moved is derived from the transaction's pre- and post-balances and its
// fee, so it covers every way SOL moves (system transfers, program calls,
// failed transactions that still paid their fee).
//
// SPL token balances are not scanned.
package solscan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/retry"
)

// Defaults.
const (
	DefaultChunkSize   = 100
	DefaultConcurrency = 8
	pageLimit          = 1000 // getSignaturesForAddress's maximum
)

// Config configures a Scanner.
type Config struct {
	Network     string // chain name, "solana"
	RPCURL      string
	ChunkSize   int // signatures per chunk, i.e. between checkpoints (default 100)
	Concurrency int // getTransaction calls in flight (default 8)
	RPCRate     int // requests a second to the endpoint, shared with keeper's other clients of it (0: no cap)
}

// Scanner scans Solana history at finalized commitment. It is safe for
// concurrent use.
type Scanner struct {
	cfg Config
	rpc *rpc.Client
}

// New returns a scanner for the endpoint. It does not connect yet.
func New(cfg Config) *Scanner {
	cfg.ChunkSize = cmp.Or(cfg.ChunkSize, DefaultChunkSize)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	hc := &http.Client{Transport: rpcpool.TransportFor(rpcpool.Solana, cfg.RPCURL, float64(cfg.RPCRate), http.DefaultTransport)}
	return &Scanner{cfg: cfg, rpc: rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(cfg.RPCURL, &jsonrpc.RPCClientOpts{HTTPClient: hc}))}
}

// Network implements scan.Scanner.
func (s *Scanner) Network() string { return s.cfg.Network }

// Unit implements scan.Scanner.
func (s *Scanner) Unit() string { return "signatures" }

// ParseAddress implements scan.Scanner.
func (s *Scanner) ParseAddress(a string) (string, error) { return ParseAddress(a) }

// ParseAddress accepts a base58 32-byte public key, as written.
func ParseAddress(a string) (string, error) {
	// 32 bytes are at most 44 characters; the length is checked first because
	// base58 decoding takes time quadratic in its input: a megabyte of hostile
	// "address" would hold a core for minutes.
	if len(a) <= 44 {
		if pk, err := solana.PublicKeyFromBase58(a); err == nil && pk.String() == a {
			return a, nil
		}
	}
	return "", retry.Permanent(fmt.Errorf("%q is not a Solana address: a base58 32-byte public key", clip(a)))
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (s *Scanner) wrap(op string, err error) error {
	var re *jsonrpc.RPCError
	if errors.As(err, &re) {
		err = fmt.Errorf("rpc error %d: %s", re.Code, re.Message)
		if re.Code == -32602 { // invalid params: asking again will not help
			err = retry.Permanent(err)
		}
	}
	return fmt.Errorf("%s: %s: %w", s.cfg.Network, op, err)
}

// Finalized implements scan.Scanner: the finalized slot.
func (s *Scanner) Finalized(ctx context.Context) (uint64, error) {
	var slot uint64
	err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
		var err error
		slot, err = s.rpc.GetSlot(ctx, rpc.CommitmentFinalized)
		if err != nil {
			return s.wrap("getSlot", err)
		}
		return nil
	})
	return slot, err
}

type sigRef struct {
	sig  solana.Signature
	slot uint64
}

// Scan implements scan.Scanner.
func (s *Scanner) Scan(ctx context.Context, job scan.Job, emit func(scan.Chunk) error) error {
	if _, err := ParseAddress(job.Wallet); err != nil {
		return err
	}
	wallet := solana.MustPublicKeyFromBase58(job.Wallet)
	var until solana.Signature
	if job.From.Sig != "" {
		sig, err := solana.SignatureFromBase58(job.From.Sig)
		if err != nil {
			return retry.Permanent(fmt.Errorf("%s: stored cursor %q is not a signature", s.cfg.Network, job.From.Sig))
		}
		until = sig
	}
	sigs, err := s.signatures(ctx, wallet, until, job.Start, job.Target)
	if err != nil {
		return err
	}
	total := job.Scanned + uint64(len(sigs))
	cur := job.From
	if err := emit(scan.Chunk{Cursor: cur, Scanned: job.Scanned, Total: total}); err != nil {
		return err
	}
	for lo := 0; lo < len(sigs); lo += s.cfg.ChunkSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		part := sigs[lo:min(lo+s.cfg.ChunkSize, len(sigs))]
		txs, err := s.transactions(ctx, part)
		if err != nil {
			return err
		}
		var transfers []scan.Transfer
		for i, tx := range txs {
			t, err := derive(job.Wallet, part[i].sig.String(), tx)
			if err != nil {
				return fmt.Errorf("%s: %w", s.cfg.Network, err)
			}
			transfers = append(transfers, t...)
		}
		last := part[len(part)-1]
		cur = scan.Cursor{Block: last.slot, Sig: last.sig.String()}
		if err := emit(scan.Chunk{Transfers: transfers, Cursor: cur, Scanned: job.Scanned + uint64(lo+len(part)), Total: total}); err != nil {
			return err
		}
	}
	return nil
}

// signatures lists the wallet's signatures after until (exclusive) with
// start ≤ slot ≤ target, oldest first.
func (s *Scanner) signatures(ctx context.Context, wallet solana.PublicKey, until solana.Signature, start, target uint64) ([]sigRef, error) {
	var (
		out    []sigRef
		before solana.Signature
		limit  = pageLimit
	)
	for {
		var page []*rpc.TransactionSignature
		err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
			var err error
			page, err = s.rpc.GetSignaturesForAddressWithOpts(ctx, wallet, &rpc.GetSignaturesForAddressOpts{
				Limit: &limit, Before: before, Until: until, Commitment: rpc.CommitmentFinalized,
			})
			if err != nil {
				return s.wrap("getSignaturesForAddress", err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		done := len(page) < pageLimit
		for _, p := range page {
			if p.Slot < start {
				done = true
				break
			}
			if p.Slot <= target {
				out = append(out, sigRef{sig: p.Signature, slot: p.Slot})
			}
		}
		if done || len(page) == 0 {
			break
		}
		before = page[len(page)-1].Signature
	}
	slices.Reverse(out)
	return out, nil
}

// transactions fetches each signature's transaction, a few at once, in order.
func (s *Scanner) transactions(ctx context.Context, sigs []sigRef) ([]*rpc.GetTransactionResult, error) {
	out := make([]*rpc.GetTransactionResult, len(sigs))
	errs := make([]error, len(sigs))
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	v0 := uint64(0)
	for i := range sigs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
				tx, err := s.rpc.GetTransaction(ctx, sigs[i].sig, &rpc.GetTransactionOpts{
					Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentFinalized, MaxSupportedTransactionVersion: &v0,
				})
				switch {
				case errors.Is(err, rpc.ErrNotFound) || (err == nil && (tx == nil || tx.Meta == nil)):
					return fmt.Errorf("%s: finalized transaction %s is not available from the node", s.cfg.Network, sigs[i].sig)
				case err != nil:
					return s.wrap("getTransaction "+sigs[i].sig.String(), err)
				}
				out[i] = tx
				return nil
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// accountKeys are the transaction's accounts in balance order: the message's
// keys, then those loaded from lookup tables (writable, then read-only).
func accountKeys(tx *rpc.GetTransactionResult) ([]solana.PublicKey, error) {
	if tx.Transaction == nil {
		return nil, errors.New("transaction without its message")
	}
	decoded, err := tx.Transaction.GetTransaction()
	if err != nil {
		return nil, fmt.Errorf("decode transaction: %w", err)
	}
	keys := slices.Clone(decoded.Message.AccountKeys)
	keys = append(keys, tx.Meta.LoadedAddresses.Writable...)
	return append(keys, tx.Meta.LoadedAddresses.ReadOnly...), nil
}

// derive turns one transaction into the wallet's transfers: the fee when the
// wallet paid it (it is account 0), and the rest of its balance change as
// one SOL transfer from (or to) the account that moved the most the other way.
func derive(wallet, sig string, tx *rpc.GetTransactionResult) ([]scan.Transfer, error) {
	keys, err := accountKeys(tx)
	if err != nil {
		return nil, fmt.Errorf("transaction %s: %w", sig, err)
	}
	pre, post := tx.Meta.PreBalances, tx.Meta.PostBalances
	if len(pre) != len(keys) || len(post) != len(keys) {
		return nil, fmt.Errorf("transaction %s: %d accounts but %d/%d balances", sig, len(keys), len(pre), len(post))
	}
	w := slices.IndexFunc(keys, func(k solana.PublicKey) bool { return k.String() == wallet })
	if w < 0 {
		return nil, nil // named in an instruction, not an account of the transaction
	}
	base := scan.Transfer{Tx: sig, Index: w, Asset: scan.NativeAsset, Block: tx.Slot}
	if tx.BlockTime != nil {
		base.BlockTime = time.Unix(int64(*tx.BlockTime), 0).UTC()
	}
	// change[i] is account i's balance change apart from the fee.
	change := func(i int) *big.Int {
		d := new(big.Int).Sub(new(big.Int).SetUint64(post[i]), new(big.Int).SetUint64(pre[i]))
		if i == 0 {
			d.Add(d, new(big.Int).SetUint64(tx.Meta.Fee))
		}
		return d
	}
	var out []scan.Transfer
	if w == 0 && tx.Meta.Fee > 0 {
		t := base
		t.Kind, t.From, t.Amount, t.Direction = scan.KindFee, wallet, new(big.Int).SetUint64(tx.Meta.Fee), scan.Out
		out = append(out, t)
	}
	net := change(w)
	if net.Sign() == 0 {
		return out, nil
	}
	// The counterparty moved the most in the opposite direction.
	other, best := "", new(big.Int)
	for i := range keys {
		if i == w {
			continue
		}
		d := change(i)
		if d.Sign() != 0 && d.Sign() != net.Sign() && d.CmpAbs(best) > 0 {
			other, best = keys[i].String(), d
		}
	}
	t := base
	t.Kind = scan.KindNative
	if net.Sign() > 0 {
		t.From, t.To, t.Amount, t.Direction = other, wallet, net, scan.In
	} else {
		t.From, t.To, t.Amount, t.Direction = wallet, other, net.Neg(net), scan.Out
	}
	return append(out, t), nil
}

// Holdings implements scan.Scanner for SOL: the wallet's balance after
// slot at, as the chain's own transaction records give it: the post-balance
// of its newest transaction at or before at, or, when it has none, the
// pre-balance of its oldest one (an account credited outside any
// transaction, at genesis for one, holds that much before its first); a
// wallet without transactions holds what getBalance says. Other assets are
// not known.
func (s *Scanner) Holdings(ctx context.Context, wallet string, at uint64, assets []string) ([]scan.Holding, error) {
	out := make([]scan.Holding, len(assets))
	for i, a := range assets {
		out[i] = scan.Holding{Asset: a, Detail: "only SOL balances are read on Solana"}
	}
	i := slices.Index(assets, scan.NativeAsset)
	if i < 0 {
		return out, nil
	}
	if _, err := ParseAddress(wallet); err != nil {
		return nil, err
	}
	pk := solana.MustPublicKeyFromBase58(wallet)
	ref, before, found, err := s.around(ctx, pk, at)
	if err != nil {
		return nil, err
	}
	lamports := new(big.Int)
	if !found {
		// No transactions at all: what it holds now it has always held.
		err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
			bal, err := s.rpc.GetBalance(ctx, pk, rpc.CommitmentFinalized)
			if err != nil {
				return s.wrap("getBalance", err)
			}
			lamports.SetUint64(bal.Value)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if found {
		txs, err := s.transactions(ctx, []sigRef{ref})
		if err != nil {
			return nil, err
		}
		keys, err := accountKeys(txs[0])
		if err != nil {
			return nil, fmt.Errorf("%s: transaction %s: %w", s.cfg.Network, ref.sig, err)
		}
		balances := txs[0].Meta.PostBalances
		if !before {
			balances = txs[0].Meta.PreBalances
		}
		if w := slices.IndexFunc(keys, func(k solana.PublicKey) bool { return k == pk }); w >= 0 && w < len(balances) {
			lamports.SetUint64(balances[w])
		}
	}
	out[i] = scan.Holding{Asset: scan.NativeAsset, Amount: lamports, Known: true}
	return out, nil
}

// around finds the wallet's newest signature with slot ≤ at (before=true)
// or, when there is none, its oldest signature (before=false).
func (s *Scanner) around(ctx context.Context, wallet solana.PublicKey, at uint64) (ref sigRef, before, found bool, err error) {
	var prev solana.Signature
	limit := pageLimit
	for {
		var page []*rpc.TransactionSignature
		err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
			var err error
			page, err = s.rpc.GetSignaturesForAddressWithOpts(ctx, wallet, &rpc.GetSignaturesForAddressOpts{Limit: &limit, Before: prev, Commitment: rpc.CommitmentFinalized})
			if err != nil {
				return s.wrap("getSignaturesForAddress", err)
			}
			return nil
		})
		if err != nil {
			return sigRef{}, false, false, err
		}
		for _, p := range page {
			if p.Slot <= at {
				return sigRef{sig: p.Signature, slot: p.Slot}, true, true, nil
			}
		}
		if len(page) > 0 {
			oldest := page[len(page)-1]
			ref, found = sigRef{sig: oldest.Signature, slot: oldest.Slot}, true
		}
		if len(page) < pageLimit {
			return ref, false, found, nil
		}
		prev = page[len(page)-1].Signature
	}
}
