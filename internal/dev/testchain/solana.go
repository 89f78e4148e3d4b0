package testchain

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/dev/devnet"
)

// SolanaHistory is a wallet's history on a devnet.
type SolanaHistory struct {
	Wallet   solana.PrivateKey
	Expected []Expected // SOL moved to or from the wallet (fees apart)
	Paid     int        // transactions whose fee the wallet paid
	Slot     uint64     // slot of the wallet's last transaction; all of it is finalized
}

// BuildSolanaHistory makes a fresh wallet on d and gives it a history: SOL
// from the devnet's payer and from a counterparty, payments to the
// counterparty, a transaction that fails on chain (the wallet still pays its
// fee) and transfers between the other two. It returns once everything is
// finalized.
func BuildSolanaHistory(ctx context.Context, d *devnet.Devnet, rounds int) (*SolanaHistory, error) {
	c := rpc.New(d.URL())
	payer := d.Payer()
	wallet, err := solana.NewRandomPrivateKey()
	if err != nil {
		return nil, err
	}
	other, err := solana.NewRandomPrivateKey()
	if err != nil {
		return nil, err
	}
	h := &SolanaHistory{Wallet: wallet}
	var sigs []solana.Signature
	send := func(from solana.PrivateKey, to solana.PublicKey, lamports uint64, expect bool) error {
		bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
		if err != nil {
			return err
		}
		tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, from.PublicKey(), to).Build()},
			bh.Value.Blockhash, solana.TransactionPayer(from.PublicKey()))
		if err != nil {
			return err
		}
		if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
			if k == from.PublicKey() {
				return &from
			}
			return nil
		}); err != nil {
			return err
		}
		// Preflight is skipped so the overdrawn transfer reaches the chain
		// and fails there, as a real one would after a stale simulation.
		sig, err := c.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
		if err != nil {
			return fmt.Errorf("send %d lamports: %w", lamports, err)
		}
		sigs = append(sigs, sig)
		if from.PublicKey() == wallet.PublicKey() {
			h.Paid++
		}
		if expect {
			dir := scan.In
			if from.PublicKey() == wallet.PublicKey() {
				dir = scan.Out
			}
			h.Expected = append(h.Expected, Expected{
				Tx: sig.String(), Kind: scan.KindNative, Asset: scan.NativeAsset,
				From: from.PublicKey().String(), To: to.String(), Amount: bigU(lamports), Direction: dir,
			})
		}
		return nil
	}
	// Fund both well above the rent-exempt minimum first.
	if err := send(payer, wallet.PublicKey(), 5*devnet.LamportsPerSOL, true); err != nil {
		return nil, err
	}
	if err := send(payer, other.PublicKey(), 5*devnet.LamportsPerSOL, false); err != nil {
		return nil, err
	}
	if _, err := waitFinal(ctx, c, sigs); err != nil {
		return nil, err
	}
	for r := uint64(1); r <= uint64(rounds); r++ {
		steps := []func() error{
			func() error { return send(payer, wallet.PublicKey(), 1_000_000+r, true) },
			func() error { return send(wallet, other.PublicKey(), 20_000+r, true) },
			func() error { return send(other, wallet.PublicKey(), 7_000+r, true) },
			func() error { return send(payer, other.PublicKey(), 3_000+r, false) },
		}
		if r%10 == 1 { // fails on chain: more than the wallet has
			steps = append(steps, func() error { return send(wallet, other.PublicKey(), 1_000*devnet.LamportsPerSOL+r, false) })
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, fmt.Errorf("round %d: %w", r, err)
			}
		}
	}
	if h.Slot, err = waitFinal(ctx, c, sigs); err != nil {
		return nil, err
	}
	return h, nil
}

// waitFinal waits until every signature is finalized and returns the newest
// slot among them.
func waitFinal(ctx context.Context, c *rpc.Client, sigs []solana.Signature) (uint64, error) {
	deadline := time.Now().Add(time.Minute)
	var newest uint64
	for i := 0; i < len(sigs); {
		hi := min(i+256, len(sigs))
		out, err := c.GetSignatureStatuses(ctx, true, sigs[i:hi]...)
		if err != nil {
			return 0, err
		}
		done := true
		for j, s := range out.Value {
			if s == nil || s.ConfirmationStatus != rpc.ConfirmationStatusFinalized {
				done = false
				if time.Now().After(deadline) {
					return 0, fmt.Errorf("transaction %s not finalized within a minute", sigs[i+j])
				}
				break
			}
			newest = max(newest, s.Slot)
		}
		if done {
			i = hi
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	return newest, nil
}

func bigU(v uint64) *big.Int { return new(big.Int).SetUint64(v) }
