package evm_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
)

func TestBalanceIsTheSignersWeiAndFallsByWhatAnAnchorCost(t *testing.T) {
	c := startChain(t, devchain.Options{FinalityDepth: 1})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()

	var f chains.Funded = a
	before, err := f.Balance(ctx)
	require.NoError(t, err)
	onNode, err := ec.BalanceAt(ctx, a.Address(), nil)
	require.NoError(t, err)
	require.Positive(t, before.Sign(), "the dev signer is funded")
	assert.Zero(t, before.Cmp(onNode), "Balance is the node's eth_getBalance of the signer")

	j := chaintest.NewJournal()
	_, err = a.Submit(ctx, chains.Anchor{BatchID: 1, Root: randomRoot(t)}, j)
	require.NoError(t, err)
	st := waitState(t, a, j, 1, chains.Final, 20*time.Second)
	rc, err := ec.TransactionReceipt(ctx, common.HexToHash(st.Ref))
	require.NoError(t, err)

	after, err := f.Balance(ctx)
	require.NoError(t, err)
	tx, _, err := ec.TransactionByHash(ctx, common.HexToHash(st.Ref))
	require.NoError(t, err)
	fee := new(big.Int).Mul(new(big.Int).SetUint64(rc.GasUsed), rc.EffectiveGasPrice)
	spent := new(big.Int).Add(fee, tx.Value())
	assert.Zero(t, new(big.Int).Sub(before, after).Cmp(spent), "the balance fell by the anchor's fee: %s − %s ≠ %s", before, after, spent)
}
