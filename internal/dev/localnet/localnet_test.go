package localnet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
)

func TestNoLocalChainStartsWhereSeveralProvidersAreConfigured(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.EVM.RPC.URLs = []string{"https://a.example", "https://b.example"}
	cfg.Solana.RPC.URLs = []string{"https://s1.example", "https://s2.example"}

	n, err := StartFor(context.Background(), &cfg, nil)
	require.NoError(t, err)
	assert.Nil(t, n, "the providers are the chains: no local chain, no dev key")
	assert.Empty(t, cfg.EVM.RPCURL)
	assert.Empty(t, cfg.Solana.RPCURL)
}
