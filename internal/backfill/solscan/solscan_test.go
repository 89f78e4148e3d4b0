package solscan_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/retry"
)

func startDevnet(t *testing.T) *devnet.Devnet {
	t.Helper()
	d, err := devnet.Start(t.Context(), devnet.Options{SlotTime: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	return d
}

func scanAll(t *testing.T, s *solscan.Scanner, job scan.Job) ([]scan.Transfer, []scan.Chunk) {
	t.Helper()
	var (
		all    []scan.Transfer
		chunks []scan.Chunk
	)
	require.NoError(t, s.Scan(context.Background(), job, func(c scan.Chunk) error {
		all = append(all, c.Transfers...)
		chunks = append(chunks, c)
		return nil
	}))
	return all, chunks
}

func net(transfers []scan.Transfer) *big.Int {
	sum := new(big.Int)
	for _, tr := range transfers {
		switch tr.Direction {
		case scan.In:
			sum.Add(sum, tr.Amount)
		case scan.Out:
			sum.Sub(sum, tr.Amount)
		}
	}
	return sum
}

func TestScanDerivesTheWalletsSOLTransfersAndFeesFromBalances(t *testing.T) {
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 25)
	require.NoError(t, err)
	s := solscan.New(solscan.Config{Network: "solana", RPCURL: d.URL(), ChunkSize: 16})
	fin, err := s.Finalized(context.Background())
	require.NoError(t, err)
	require.GreaterOrEqual(t, fin, h.Slot)
	wallet := h.Wallet.PublicKey().String()

	all, chunks := scanAll(t, s, scan.Job{Wallet: wallet, Target: fin})
	got := map[string]scan.Transfer{}
	fees := 0
	for _, tr := range all {
		if tr.Kind == scan.KindFee {
			fees++
			assert.Equal(t, uint64(5000), tr.Amount.Uint64())
			continue
		}
		require.NotContains(t, got, tr.Tx)
		got[tr.Tx] = tr
	}
	require.Len(t, got, len(h.Expected))
	for _, e := range h.Expected {
		tr := got[e.Tx]
		assert.Equal(t, e.Amount.String(), tr.Amount.String(), e.Tx)
		assert.Equal(t, e.From, tr.From, e.Tx)
		assert.Equal(t, e.To, tr.To, e.Tx)
		assert.Equal(t, e.Direction, tr.Direction, e.Tx)
	}
	assert.Equal(t, h.Paid, fees, "every transaction the wallet paid for, the failed ones too")
	last := chunks[len(chunks)-1]
	assert.Equal(t, last.Total, last.Scanned)
	failed := h.Paid
	for _, e := range h.Expected {
		if e.Direction == scan.Out {
			failed--
		}
	}
	assert.Equal(t, uint64(len(h.Expected)+failed), last.Total, "one signature per transaction, failed ones included")

	hold, err := s.Holdings(context.Background(), wallet, fin, []string{scan.NativeAsset})
	require.NoError(t, err)
	require.True(t, hold[0].Known)
	assert.Equal(t, d.Balance(h.Wallet.PublicKey()), hold[0].Amount.Uint64())
	assert.Equal(t, hold[0].Amount.String(), net(all).String(), "the transfers add up to the balance")
}

func TestScanResumesAfterTheStoredSignature(t *testing.T) {
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 12)
	require.NoError(t, err)
	s := solscan.New(solscan.Config{Network: "solana", RPCURL: d.URL(), ChunkSize: 5})
	fin, err := s.Finalized(context.Background())
	require.NoError(t, err)
	wallet := h.Wallet.PublicKey().String()
	whole, _ := scanAll(t, s, scan.Job{Wallet: wallet, Target: fin})

	stop := errors.New("stop")
	var first []scan.Transfer
	var cur scan.Chunk
	err = s.Scan(context.Background(), scan.Job{Wallet: wallet, Target: fin}, func(c scan.Chunk) error {
		first = append(first, c.Transfers...)
		cur = c
		if c.Scanned >= 10 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	rest, chunks := scanAll(t, s, scan.Job{Wallet: wallet, Target: fin, From: cur.Cursor, Scanned: cur.Scanned})
	assert.ElementsMatch(t, whole, append(first, rest...))
	assert.Equal(t, cur.Total, chunks[len(chunks)-1].Total, "the resumed scan knows the same total")
}

func TestScanOnlyCoversTheTargetRange(t *testing.T) {
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 3)
	require.NoError(t, err)
	s := solscan.New(solscan.Config{Network: "solana", RPCURL: d.URL()})
	all, _ := scanAll(t, s, scan.Job{Wallet: h.Wallet.PublicKey().String(), Start: h.Slot + 1, Target: h.Slot + 1000})
	assert.Empty(t, all, "nothing after the last transaction")
}

func TestRPCFailuresOutlastingTheRetriesFailTheScan(t *testing.T) {
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 2)
	require.NoError(t, err)
	s := solscan.New(solscan.Config{Network: "solana", RPCURL: d.URL()})
	d.FailRPC("getSignaturesForAddress", 2)
	_, _ = scanAll(t, s, scan.Job{Wallet: h.Wallet.PublicKey().String(), Target: 1 << 40})

	d.FailRPC("getSignaturesForAddress", 3)
	err = s.Scan(context.Background(), scan.Job{Wallet: h.Wallet.PublicKey().String(), Target: 1 << 40}, func(scan.Chunk) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Internal error")
	assert.False(t, retry.IsPermanent(err), "worth retrying later")
}

func TestAddressesMustBeBase58PublicKeys(t *testing.T) {
	_, err := solscan.ParseAddress("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
	require.NoError(t, err)
	for _, bad := range []string{"", "0x52908400098527886E0F7030069857D2E4169EE7", "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFi0", "abc"} {
		_, err := solscan.ParseAddress(bad)
		assert.True(t, retry.IsPermanent(err), "%q", bad)
	}
}

func TestABalanceBeforeTheFirstTransactionIsThatTransactionsPreBalance(t *testing.T) {
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 1)
	require.NoError(t, err)
	s := solscan.New(solscan.Config{Network: "solana", RPCURL: d.URL()})
	wallet := h.Wallet.PublicKey().String()
	hold, err := s.Holdings(context.Background(), wallet, 0, []string{scan.NativeAsset, "0xtoken"})
	require.NoError(t, err)
	assert.True(t, hold[0].Known)
	assert.Zero(t, hold[0].Amount.Sign(), "a wallet first funded by a transaction held nothing before it")
	assert.False(t, hold[1].Known, "SPL tokens are not read")

	// An account credited outside any transaction (the devnet's genesis
	// credit) held that much before its first transaction.
	funded, err := d.NewFundedKey(3 * devnet.LamportsPerSOL)
	require.NoError(t, err)
	hold, err = s.Holdings(context.Background(), funded.PublicKey().String(), 0, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.Equal(t, uint64(3*devnet.LamportsPerSOL), hold[0].Amount.Uint64(), "no transaction at all: its balance now")
	payer := d.Payer().PublicKey().String()
	fin, err := s.Finalized(context.Background())
	require.NoError(t, err)
	hold, err = s.Holdings(context.Background(), payer, 0, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.Equal(t, uint64(devnet.DefaultPayerLamports), hold[0].Amount.Uint64(), "the payer's genesis balance")
	all, _ := scanAll(t, s, scan.Job{Wallet: payer, Target: fin})
	closing, err := s.Holdings(context.Background(), payer, fin, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.Equal(t, closing[0].Amount.String(), new(big.Int).Add(hold[0].Amount, net(all)).String(), "opening + transfers = closing")
}
