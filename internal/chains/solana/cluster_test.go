package solana

import (
	"context"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/retry"
)

// onCluster starts a devnet posing as the named public cluster.
func onCluster(t *testing.T, name string) *devnet.Devnet {
	t.Helper()
	d, err := devnet.Start(t.Context(), devnet.Options{SlotTime: 50 * time.Millisecond, GenesisHash: sol.MustHashFromBase58(clusters[name])})
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	return d
}

func TestANodeOnAnotherClusterIsRefusedNamingBoth(t *testing.T) {
	chain := onCluster(t, "devnet")
	a := newAdapter(t, chain.URL()+"/?api-key=hunter2", newKey(t), func(c *Config) { c.Cluster = "mainnet-beta" })

	err := a.CheckCluster(context.Background())

	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err), "no retry puts the node on another cluster")
	msg := err.Error()
	assert.Contains(t, msg, "configured mainnet-beta (genesis hash 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d)")
	assert.Contains(t, msg, "is on devnet (genesis hash EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG)")
	assert.NotContains(t, msg, "hunter2", "the URL's secrets stay out")
}

func TestANodeOnTheConfiguredClusterIsAccepted(t *testing.T) {
	for _, name := range []string{"mainnet-beta", "devnet", "testnet"} {
		chain := onCluster(t, name)
		a := newAdapter(t, chain.URL(), newKey(t), func(c *Config) { c.Cluster = name })
		assert.NoError(t, a.CheckCluster(context.Background()), name)
	}
}

func TestALocalClusterIsRefusedByANamedClusterAndAcceptedByCustom(t *testing.T) {
	chain, payer := startDevnet(t, 50*time.Millisecond)
	err := newAdapter(t, chain.URL(), payer, func(c *Config) { c.Cluster = "testnet" }).CheckCluster(context.Background())
	require.ErrorContains(t, err, "is on an unknown cluster")

	chain.ResetCalls()
	for _, custom := range []string{"", ClusterCustom} {
		require.NoError(t, newAdapter(t, chain.URL(), payer, func(c *Config) { c.Cluster = custom }).CheckCluster(context.Background()))
	}
	assert.Zero(t, chain.Calls("getGenesisHash"), "custom asks nothing")
}

func TestAnUnknownClusterNameIsRefusedPermanently(t *testing.T) {
	_, err := New(Config{RPCURL: "http://node", Payer: newKey(t), Cluster: "mainnet"})
	require.ErrorContains(t, err, `unknown cluster "mainnet"`)
	assert.True(t, retry.IsPermanent(err))
}

func TestAClusterCheckAgainstAnUnreachableNodeIsRetryable(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1", newKey(t), func(c *Config) { c.Cluster = "devnet"; c.RPCTimeout = time.Second })
	err := a.CheckCluster(context.Background())
	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err))
}
