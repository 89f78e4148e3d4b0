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

// etherlinkProxy is the local EVM chain behind a proxy with EtherLink's fee market.
func etherlinkProxy(t *testing.T) (*devchain.Chain, *rpcfault.Proxy, *ethclient.Client) {
	t.Helper()
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: 50 * time.Millisecond, AheadOfClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	p, err := rpcfault.Start(c.URL(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	m := rpcfault.EtherLinkFees()
	p.SetFeeMarket(&m)
	ec, err := ethclient.Dial(p.URL())
	require.NoError(t, err)
	t.Cleanup(ec.Close)
	return c, p, ec
}

func TestTheFeeMarketReportsEtherLinksBaseFeeFloorAndTheInclusionFeeInTheGasEstimate(t *testing.T) {
	c, _, ec := etherlinkProxy(t)
	ctx := context.Background()
	price, err := ec.SuggestGasPrice(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, price.Int64(), int64(params.GWei), "eth_gasPrice is at least the 1 gwei floor")
	head, err := ec.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, head.BaseFee.Int64(), int64(params.GWei), "so is the latest block's base fee")

	to := c.Address()
	data := evm.Payload([32]byte{1})
	gas, err := ec.EstimateGas(ctx, ethereum.CallMsg{From: c.Address(), To: &to, Data: data})
	require.NoError(t, err)
	inclusion := uint64(4e12 * (150 + len(data)) / params.GWei) // 0.000004 XTZ a byte, in gas at 1 gwei
	assert.GreaterOrEqual(t, gas, 21000+inclusion, "the estimate carries the inclusion fee")
}

func TestAnUnderpricedTransactionIsAcceptedThenNeverMinedNorKnownAndAPricedOneIsMined(t *testing.T) {
	c, p, ec := etherlinkProxy(t)
	ctx := context.Background()
	key, err := evm.LoadKey(c.KeyFile())
	require.NoError(t, err)
	signer := types.LatestSignerForChainID(new(big.Int).SetUint64(c.ChainID()))
	to := c.Address()
	data := evm.Payload([32]byte{2})
	sign := func(gas uint64, feeCap int64) *types.Transaction {
		return types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(c.ChainID()), Nonce: 0,
			GasFeeCap: big.NewInt(feeCap), Gas: gas, To: &to, Data: data})
	}

	cheap := sign(30_000, 10*params.GWei) // a generic sender's gas: no inclusion fee
	require.NoError(t, ec.SendTransaction(ctx, cheap), "accepted, as EtherLink accepts it")
	low := sign(2_000_000, params.GWei/2) // below the base fee floor
	require.NoError(t, ec.SendTransaction(ctx, low))
	require.NoError(t, c.Mine(3))
	for _, tx := range []*types.Transaction{cheap, low} {
		_, _, err = ec.TransactionByHash(ctx, tx.Hash())
		assert.ErrorIs(t, err, ethereum.NotFound, "the node never knew %s", tx.Hash())
	}
	assert.EqualValues(t, 2, p.Stats().Dropped)

	gas, err := ec.EstimateGas(ctx, ethereum.CallMsg{From: c.Address(), To: &to, Data: data})
	require.NoError(t, err)
	priced := sign(gas, 2*params.GWei)
	require.NoError(t, ec.SendTransaction(ctx, priced))
	require.Eventually(t, func() bool {
		r, err := ec.TransactionReceipt(ctx, priced.Hash())
		return err == nil && r.Status == types.ReceiptStatusSuccessful
	}, 5*time.Second, 20*time.Millisecond)
	assert.EqualValues(t, 2, p.Stats().Dropped)

	m := rpcfault.EtherLinkFees()
	m.MinBaseFee = big.NewInt(5 * params.GWei) // the base fee rose under a backlog
	p.SetFeeMarket(&m)
	head, err := ec.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(5*params.GWei), head.BaseFee.Int64())
	stale := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(c.ChainID()), Nonce: 1,
		GasFeeCap: big.NewInt(4 * params.GWei), Gas: gas, To: &to, Data: data})
	require.NoError(t, ec.SendTransaction(ctx, stale))
	assert.EqualValues(t, 3, p.Stats().Dropped, "priced for yesterday's base fee: dropped")
}
