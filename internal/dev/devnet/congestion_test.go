package devnet

import (
	"context"
	"testing"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnderCongestionOnlyTransactionsPayingTheThresholdLand(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	d.Congest(10_000)
	priced := func(memo string, price uint64) solana.Signature {
		ixs := []solana.Instruction{memoIx(memo)}
		if price > 0 {
			ixs = append([]solana.Instruction{computebudget.NewSetComputeUnitPriceInstruction(price).Build()}, ixs...)
		}
		sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, ixs...))
		require.NoError(t, err, "%s: sendTransaction accepts it whatever it pays", memo)
		return sig
	}
	free := priced("no priority fee", 0)
	cheap := priced("just below", 9_999)
	enough := priced("at the threshold", 10_000)
	d.Advance(3)

	assert.Nil(t, status(t, c, free), "a transaction without a compute unit price never lands")
	assert.Nil(t, status(t, c, cheap))
	assert.NotNil(t, status(t, c, enough))

	d.Congest(0)
	after := priced("congestion over", 0)
	d.Advance(2)
	assert.NotNil(t, status(t, c, after), "without congestion a free transaction lands again")
}

func TestUnderCongestionRecentPrioritizationFeesAreAroundTheThreshold(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	d.Advance(10)
	d.Congest(40_000)
	congested := d.Slot() + 1
	d.Advance(150)

	fees, err := c.GetRecentPrioritizationFees(ctx, nil)
	require.NoError(t, err)
	require.Len(t, fees, 150, "the last 150 blocks, as the real fee cache keeps")
	for _, f := range fees {
		require.GreaterOrEqual(t, f.Slot, congested)
		assert.GreaterOrEqual(t, f.PrioritizationFee, uint64(40_000), "slot %d", f.Slot)
		assert.LessOrEqual(t, f.PrioritizationFee, uint64(60_000), "slot %d", f.Slot)
	}
	distinct := map[uint64]bool{}
	for _, f := range fees {
		distinct[f.PrioritizationFee] = true
	}
	assert.Greater(t, len(distinct), 10, "fees vary from block to block")

	d.Congest(0)
	d.Advance(1)
	fees, err = c.GetRecentPrioritizationFees(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, fees[len(fees)-1].PrioritizationFee, "an empty block after congestion asks for nothing")
}

func TestAGenesisHashOptionMakesTheDevnetPoseAsThatCluster(t *testing.T) {
	devnetGenesis := solana.MustHashFromBase58("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG")
	d, c := startPaused(t, Options{GenesisHash: devnetGenesis})
	got, err := c.GetGenesisHash(context.Background())
	require.NoError(t, err)
	assert.Equal(t, devnetGenesis, got)

	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(context.Background(), signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("on a posed cluster")))
	require.NoError(t, err)
	d.Advance(2)
	assert.NotNil(t, status(t, c, sig), "the chain works as usual")
}
