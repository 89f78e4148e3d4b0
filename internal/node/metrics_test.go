package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/devchain"
)

func TestAStalledFinalizedBlockShowsOnMetricsUntilItMovesAgain(t *testing.T) {
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: 50 * time.Millisecond, FinalityDepth: 3, AheadOfClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	key, err := evm.LoadKey(c.KeyFile())
	require.NoError(t, err)
	a, err := evm.New(context.Background(), evm.Config{RPCURL: c.URL(), Key: key, ChainID: devchain.DefaultChainID, FinalityStall: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(a.Close)

	reg := prometheus.NewRegistry()
	reg.MustRegister(finalityStalledGauge("etherlink", a))
	gauge := func() float64 {
		_ = a.Ping(context.Background())
		mfs, err := reg.Gather()
		require.NoError(t, err)
		require.Len(t, mfs, 1)
		require.Equal(t, "keeper_chain_finalized_stalled", mfs[0].GetName())
		require.Equal(t, "etherlink", mfs[0].GetMetric()[0].GetLabel()[0].GetValue())
		return mfs[0].GetMetric()[0].GetGauge().GetValue()
	}
	assert.Zero(t, gauge())

	c.FreezeFinality()
	require.Eventually(t, func() bool { return gauge() == 1 }, 5*time.Second, 20*time.Millisecond)
	c.ThawFinality()
	require.Eventually(t, func() bool { return gauge() == 0 }, 5*time.Second, 20*time.Millisecond)
}
