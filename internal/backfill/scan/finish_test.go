package scan_test

import (
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill/scan"
)

func move(network, tx string, kind scan.Kind, asset string, dir scan.Direction, amount int64) scan.Move {
	return scan.Move{Network: network, Transfer: scan.Transfer{Tx: tx, Kind: kind, Asset: asset, Amount: big.NewInt(amount), Direction: dir}}
}

func TestEachTransactionIsClassifiedFromEverythingTheWalletMovedInIt(t *testing.T) {
	const n = scan.NativeAsset
	moves := []scan.Move{
		move("etherlink", "0x01", scan.KindNative, n, scan.In, 1000),  // received
		move("etherlink", "0x02", scan.KindNative, n, scan.Out, 300),  // sent …
		move("etherlink", "0x02", scan.KindFee, n, scan.Out, 21),      // … with its fee
		move("etherlink", "0x03", scan.KindToken, "0xt", scan.In, 50), // swap: tokens in …
		move("etherlink", "0x03", scan.KindNative, n, scan.Out, 100),  // … for coin out
		move("etherlink", "0x03", scan.KindFee, n, scan.Out, 30),      //
		move("etherlink", "0x04", scan.KindFee, n, scan.Out, 9),       // an approval
		move("etherlink", "0x05", scan.KindNative, n, scan.Self, 5),   // to itself
		move("etherlink", "0x05", scan.KindFee, n, scan.Out, 10),      //
		move("etherlink", "0x06", scan.KindToken, "0xt", scan.In, 1),  // in and out of one asset: sent
		move("etherlink", "0x06", scan.KindToken, "0xt", scan.Out, 1),
		move("solana", "0x01", scan.KindNative, n, scan.Out, 1), // the same id on another network
	}
	assert.Equal(t, []scan.TxClass{
		{Network: "etherlink", Tx: "0x01", Class: scan.ClassReceived},
		{Network: "etherlink", Tx: "0x02", Class: scan.ClassSent},
		{Network: "etherlink", Tx: "0x03", Class: scan.ClassSwap},
		{Network: "etherlink", Tx: "0x04", Class: scan.ClassFee},
		{Network: "etherlink", Tx: "0x05", Class: scan.ClassSelf},
		{Network: "etherlink", Tx: "0x06", Class: scan.ClassSent},
		{Network: "solana", Tx: "0x01", Class: scan.ClassSent},
	}, scan.Classify(moves))
	assert.Empty(t, scan.Classify(nil))
}

func TestBalancesAreOpeningPlusInMinusOutCheckedAgainstTheChain(t *testing.T) {
	const n = scan.NativeAsset
	moves := []scan.Move{
		move("etherlink", "0x01", scan.KindNative, n, scan.In, 1000),
		move("etherlink", "0x02", scan.KindNative, n, scan.Out, 300),
		move("etherlink", "0x02", scan.KindFee, n, scan.Out, 21),
		move("etherlink", "0x03", scan.KindToken, "0xt", scan.In, 50),
		move("etherlink", "0x05", scan.KindNative, n, scan.Self, 5),
		move("solana", "s1", scan.KindNative, n, scan.In, 7),
	}
	bal := func(network, asset string, opening int64, chain *big.Int) scan.Balance {
		return scan.Balance{Network: network, Opening: scan.Holding{Asset: asset, Amount: big.NewInt(opening), Known: true}, OpeningAt: 4,
			Closing: scan.Holding{Asset: asset, Amount: chain, Known: chain != nil}, Completed: true}
	}
	unknownOpening := bal("etherlink", "0xt", 0, big.NewInt(49))
	unknownOpening.Opening.Known = false
	unfinished := bal("solana", n, 3, big.NewInt(10))
	unfinished.Completed = false
	bals := []scan.Balance{
		bal("etherlink", n, 100, big.NewInt(779)),
		unknownOpening,
		bal("etherlink", "0xu", 5, big.NewInt(8)), // held, never moved
		bal("etherlink", "0xv", 0, nil),
		unfinished,
	}
	got := scan.Reconcile(moves, bals)
	require.Len(t, got, len(bals))

	assert.Equal(t, "779", got[0].Computed.String())
	require.NotNil(t, got[0].Reconciled)
	assert.True(t, *got[0].Reconciled)
	assert.Empty(t, got[0].Detail)

	assert.Equal(t, "50", got[1].Computed.String())
	require.NotNil(t, got[1].Reconciled)
	assert.False(t, *got[1].Reconciled)
	assert.Equal(t, "the chain holds 1 less than the stored transfers explain; the balance at block 4, before the history scanned, was not known to the node and was taken as 0", got[1].Detail)

	assert.Equal(t, "5", got[2].Computed.String())
	require.NotNil(t, got[2].Reconciled)
	assert.False(t, *got[2].Reconciled)
	assert.Equal(t, "the chain holds 3 more than the stored transfers explain", got[2].Detail)

	assert.Equal(t, "0", got[3].Computed.String())
	assert.Nil(t, got[3].Reconciled)
	assert.Equal(t, "the chain's balance at the end of the scan is not known", got[3].Detail)

	assert.Equal(t, "10", got[4].Computed.String())
	assert.Nil(t, got[4].Reconciled)
	assert.Equal(t, "the backfill of solana did not complete", got[4].Detail)

	assert.Equal(t, "100", bals[0].Opening.Amount.String(), "the opening is left as it was")
}

// A wallet funded at genesis, on a node that keeps recent state only: what
// it held before the history is derived back from what it holds at the end.
func TestAnOpeningTheNodeNoLongerKnowsIsDerivedBackFromTheEndOfTheScan(t *testing.T) {
	const n = scan.NativeAsset
	moves := []scan.Move{
		move("etherlink", "0x01", scan.KindNative, n, scan.In, 1000),
		move("etherlink", "0x02", scan.KindNative, n, scan.Out, 300),
		move("etherlink", "0x02", scan.KindFee, n, scan.Out, 21),
		move("etherlink", "0x03", scan.KindToken, "0xt", scan.In, 50),
	}
	pruned := func(network, asset string, chain int64) scan.Balance {
		return scan.Balance{Network: network, Opening: scan.Holding{Asset: asset, Amount: new(big.Int)}, OpeningAt: 0,
			Closing: scan.Holding{Asset: asset, Amount: big.NewInt(chain), Known: true}, ClosingAt: 10_040, Completed: true}
	}
	got := scan.Reconcile(moves, []scan.Balance{
		pruned("etherlink", n, 10_000+1000-300-21), // the genesis allocation, 10,000
		pruned("etherlink", "0xt", 50),             // no token before: 0 reconciles
		pruned("etherlink", "0xu", 0),              // neither
	})
	require.Len(t, got, 3)

	assert.Equal(t, "10000", got[0].Opening.String(), "the genesis allocation, derived")
	assert.Equal(t, "10679", got[0].Computed.String(), "the chain's balance")
	assert.Nil(t, got[0].Reconciled, "nothing but the chain's own balance to check it against")
	assert.Equal(t, "not checked: the node no longer knows the balance at block 0, before the history scanned, so the opening balance, "+
		"10000, is the chain's balance at block 10040 less the transfers scanned; KEEPER_EVM_ARCHIVE_RPC_URL, an archive endpoint, "+
		"lets keeper read it and check", got[0].Detail)

	for _, r := range got[1:] {
		assert.Equal(t, "0", r.Opening.String())
		require.NotNil(t, r.Reconciled)
		assert.True(t, *r.Reconciled, "an opening of 0 that reconciles is taken")
		assert.Empty(t, r.Detail)
	}
}
