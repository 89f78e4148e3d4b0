package node

import (
	"context"
	"crypto/rand"
	"log/slog"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
)

func TestRunwayIsTheBalanceOverADayOfTheLastHoursSpendIgnoringTopUps(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	at := func(minutesAgo int, bal int64) balanceSample {
		return balanceSample{now.Add(-time.Duration(minutesAgo) * time.Minute), big.NewInt(bal)}
	}
	s := []balanceSample{
		at(130, 2000),
		at(90, 1000), // spent 1000 more than an hour ago: not counted
		at(50, 900),  // spent 100 within the hour
		at(20, 950),  // a top-up spends nothing
		at(0, 850),   // spent 100
	}
	spent := hourlySpend(s, now)
	assert.Equal(t, int64(200), spent.Int64())
	assert.InDelta(t, 850.0/(200*24), runwayDays(big.NewInt(850), spent), 1e-12)

	assert.Equal(t, math.Inf(1), runwayDays(big.NewInt(850), new(big.Int)), "nothing spent: no end in sight")
	assert.Zero(t, runwayDays(new(big.Int), big.NewInt(1)), "empty is empty")
	wei := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil) // 1 ether
	assert.InDelta(t, 1000.0/24, runwayDays(new(big.Int).Mul(wei, big.NewInt(1000)), wei), 1e-9, "no overflow at wei scale")

	trimmed := trimSamples(append([]balanceSample(nil), s...), now.Add(-time.Hour))
	require.Len(t, trimmed, 4, "the hour, and the sample it starts from")
	assert.Equal(t, s[1], trimmed[0])
	assert.Equal(t, spent, hourlySpend(trimmed, now), "trimming changes nothing the hour's spend needs")
	assert.Zero(t, hourlySpend(trimmed, now.Add(2*time.Hour)).Sign(), "an hour without reads spent nothing")
}

func TestSignerBalancesOfTheLocalChainsAreReadAtStartAndAgainOnlyAfterAnAnchor(t *testing.T) {
	ctx := context.Background()
	ec, err := devchain.Start(ctx, devchain.Options{Dir: t.TempDir(), BlockTime: 50 * time.Millisecond, FinalityDepth: 1, AheadOfClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ec.Stop() })
	key, err := evm.LoadKey(ec.KeyFile())
	require.NoError(t, err)
	ea, err := evm.New(ctx, evm.Config{RPCURL: ec.URL(), Key: key, ChainID: devchain.DefaultChainID, PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(ea.Close)

	sn, err := devnet.Start(t.Context(), devnet.Options{Dir: t.TempDir(), SlotTime: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(sn.Stop)
	payer, err := sn.NewFundedKey(3 * devnet.LamportsPerSOL)
	require.NoError(t, err)
	sa, err := solana.New(solana.Config{RPCURL: sn.URL(), Payer: payer, RPCTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(sa.Close)

	b := newSignerBalances(map[string]chains.Adapter{"etherlink": ea, "solana": sa}, slog.New(slog.DiscardHandler))
	reg := prometheus.NewRegistry()
	reg.MustRegister(b)
	gauges := func() map[string]map[string]float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]map[string]float64{}
		for _, mf := range mfs {
			out[mf.GetName()] = map[string]float64{}
			for _, m := range mf.GetMetric() {
				out[mf.GetName()][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	assert.Empty(t, gauges(), "no series before the first read")

	b.readAll(ctx, balanceStartTimeout)
	g := gauges()
	before, err := ea.Balance(ctx)
	require.NoError(t, err)
	assert.Equal(t, float64(3*devnet.LamportsPerSOL), g["keeper_chain_signer_balance"]["solana"])
	f, _ := new(big.Float).SetInt(before).Float64()
	assert.Equal(t, f, g["keeper_chain_signer_balance"]["etherlink"])
	assert.Equal(t, math.Inf(1), g["keeper_chain_signer_runway_days"]["etherlink"], "nothing spent yet")
	assert.Equal(t, math.Inf(1), g["keeper_chain_signer_runway_days"]["solana"])

	reads := sn.Calls("getBalance")
	b.readAnchored(ctx, time.Second)
	assert.Equal(t, reads, sn.Calls("getBalance"), "idle: no read")

	var root [32]byte
	_, _ = rand.Read(root[:])
	j := chaintest.NewJournal()
	_, err = ea.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := ea.Status(ctx, 1, j)
		return err == nil && st.State == chains.Final
	}, 20*time.Second, 50*time.Millisecond)
	b.Confirmed("etherlink")
	b.readAnchored(ctx, 5*time.Second)
	assert.Equal(t, reads, sn.Calls("getBalance"), "solana anchored nothing: not read")

	after, err := ea.Balance(ctx)
	require.NoError(t, err)
	spent := new(big.Int).Sub(before, after)
	require.Positive(t, spent.Sign(), "the anchor cost a fee")
	g = gauges()
	fa, _ := new(big.Float).SetInt(after).Float64()
	assert.Equal(t, fa, g["keeper_chain_signer_balance"]["etherlink"])
	assert.InEpsilon(t, runwayDays(after, spent), g["keeper_chain_signer_runway_days"]["etherlink"], 1e-12)
	assert.Less(t, g["keeper_chain_signer_runway_days"]["etherlink"], math.Inf(1))
	assert.Equal(t, math.Inf(1), g["keeper_chain_signer_runway_days"]["solana"])
}
