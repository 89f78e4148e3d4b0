package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/retry"
)

func TestANodeRefusesToStartOnASolanaNodeOfAnotherClusterAndStartsOnTheConfiguredOne(t *testing.T) {
	chain, err := devnet.Start(t.Context(), devnet.Options{
		Dir:         t.TempDir(),
		SlotTime:    50 * time.Millisecond,
		GenesisHash: solana.MustHashFromBase58("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"), // Solana devnet's
	})
	require.NoError(t, err)
	t.Cleanup(chain.Stop)
	start := func(cluster string) error {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		cfg.Chains = []string{"solana"}
		cfg.Solana.RPCURL = chain.URL()
		cfg.Solana.KeyFile = chain.FaucetKeyFile()
		cfg.Solana.Cluster = cluster
		require.NoError(t, cfg.Validate())
		adapters, err := node.NewChains(context.Background(), cfg, nil, nil)
		for _, a := range adapters {
			a.(interface{ Close() }).Close()
		}
		return err
	}

	err = start("mainnet-beta")
	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err))
	assert.Contains(t, err.Error(), "KEEPER_SOLANA_CLUSTER")
	assert.Contains(t, err.Error(), "configured mainnet-beta")
	assert.Contains(t, err.Error(), "is on devnet")

	assert.NoError(t, start("devnet"))
	assert.NoError(t, start("custom"))
}
