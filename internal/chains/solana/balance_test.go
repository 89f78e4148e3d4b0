package solana

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/devnet"
)

func TestBalanceIsTheFeePayersLamportsAsTheClusterHoldsThem(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	var f chains.Funded = a
	ctx := context.Background()

	b, err := f.Balance(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(10*devnet.LamportsPerSOL), b.Uint64(), "the payer was funded with 10 SOL")

	chain.Pause()
	chain.Fund(payer.PublicKey(), 12345)
	chain.Advance(2) // the credit is in the tip's slot: Balance reads what is confirmed
	b, err = f.Balance(ctx)
	require.NoError(t, err)
	assert.Equal(t, chain.Balance(payer.PublicKey()), b.Uint64())
	assert.Equal(t, uint64(10*devnet.LamportsPerSOL+12345), b.Uint64())
}
