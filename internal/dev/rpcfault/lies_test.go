package rpcfault_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
)

// lyingProxy is the local EVM chain, mined by hand, behind a proxy.
func lyingProxy(t *testing.T) (*devchain.Chain, *rpcfault.Proxy, *ethclient.Client, *ethclient.Client) {
	t.Helper()
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	p, err := rpcfault.Start(c.URL(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	lying, err := ethclient.Dial(p.URL())
	require.NoError(t, err)
	t.Cleanup(lying.Close)
	honest, err := ethclient.Dial(c.URL())
	require.NoError(t, err)
	t.Cleanup(honest.Close)
	return c, p, lying, honest
}

func anchorTx(t *testing.T, c *devchain.Chain, nonce uint64) *types.Transaction {
	t.Helper()
	key, err := evm.LoadKey(c.KeyFile())
	require.NoError(t, err)
	to := c.Address()
	return types.MustSignNewTx(key, types.LatestSignerForChainID(new(big.Int).SetUint64(c.ChainID())), &types.DynamicFeeTx{
		ChainID: new(big.Int).SetUint64(c.ChainID()), Nonce: nonce, GasFeeCap: big.NewInt(10 * params.GWei), Gas: 100_000, To: &to, Data: evm.Payload([32]byte{byte(nonce)})})
}

func TestALaggingProviderServesTheChainAsItWasAHundredBlocksAgo(t *testing.T) {
	c, p, lying, honest := lyingProxy(t)
	ctx := context.Background()
	require.NoError(t, c.Mine(150))
	p.SetLies(rpcfault.Lies{LagBlocks: 100})

	tx := anchorTx(t, c, 0)
	require.NoError(t, honest.SendTransaction(ctx, tx))
	require.NoError(t, c.Mine(1))
	head := c.Head()

	n, err := lying.BlockNumber(ctx)
	require.NoError(t, err)
	assert.Equal(t, head-100, n)
	h, err := lying.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, head-100, h.Number.Uint64(), "latest is a hundred blocks back")
	_, err = lying.TransactionReceipt(ctx, tx.Hash())
	assert.ErrorIs(t, err, ethereum.NotFound, "the receipt of a block it has not reached")
	nonce, err := lying.NonceAt(ctx, c.Address(), nil)
	require.NoError(t, err)
	assert.Zero(t, nonce, "the nonce as it was")
	r, err := honest.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err)
	assert.Equal(t, head, r.BlockNumber.Uint64())
	assert.Positive(t, p.Lied())
}

func TestAProviderThatInventsReceiptsSwallowsTransactionsAndReportsThemMined(t *testing.T) {
	c, p, lying, honest := lyingProxy(t)
	ctx := context.Background()
	require.NoError(t, c.Mine(80))
	p.SetLies(rpcfault.Lies{InventReceipts: true})

	tx := anchorTx(t, c, 0)
	require.NoError(t, lying.SendTransaction(ctx, tx))
	require.NoError(t, c.Mine(2))
	r, err := lying.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err, "a receipt for a transaction the chain never got")
	assert.EqualValues(t, types.ReceiptStatusSuccessful, r.Status)
	assert.Equal(t, c.Finalized(), r.BlockNumber.Uint64(), "in a block already final")
	again, err := lying.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err)
	assert.Equal(t, r.BlockHash, again.BlockHash, "the same lie every time")
	_, err = honest.TransactionReceipt(ctx, tx.Hash())
	assert.ErrorIs(t, err, ethereum.NotFound)
	nonce, err := honest.NonceAt(ctx, c.Address(), nil)
	require.NoError(t, err)
	assert.Zero(t, nonce, "the node never got it")

	// A transaction the node has: its real receipt.
	require.NoError(t, honest.SendTransaction(ctx, tx))
	require.NoError(t, c.Mine(1))
	real, err := honest.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err)
	other := anchorTx(t, c, 1)
	require.NoError(t, honest.SendTransaction(ctx, other))
	require.NoError(t, c.Mine(1))
	got, err := lying.TransactionReceipt(ctx, other.Hash())
	require.NoError(t, err)
	assert.Equal(t, c.Head(), got.BlockNumber.Uint64())
	assert.NotEqual(t, real.BlockHash, r.BlockHash, "the invented block is not where it landed")
}
