package evm_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/receipt"
)

// TestOnlyTheSignersOwnAnchorIsReadBackWhateverOthersSendIt: transactions
// that others send to the signer's address, with calldata claiming a
// checkpoint of a billion entries of keeper's log, hold none of the
// signer's nonces: more of them than the read-back's lookback neither stand
// for keeper's anchor nor hide it.
func TestOnlyTheSignersOwnAnchorIsReadBackWhateverOthersSendIt(t *testing.T) {
	c := startChain(t, devchain.Options{BlockTime: 20 * time.Millisecond})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()
	chainID := big.NewInt(devchain.DefaultChainID)
	signer := types.LatestSignerForChainID(chainID)
	keeper := a.Address()

	// a third party, funded by a plain transfer of the signer's
	other := mustKey(t)
	otherAddr := crypto.PubkeyToAddress(other.PublicKey)
	fund := types.MustSignNewTx(devKey(t, c), signer, &types.DynamicFeeTx{
		ChainID: chainID, Nonce: latestNonce(t, ec, keeper), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e10), Gas: 21000, To: &otherAddr, Value: big.NewInt(1e18),
	})
	require.NoError(t, ec.SendTransaction(ctx, fund))
	require.Eventually(t, func() bool { r, err := ec.TransactionReceipt(ctx, fund.Hash()); return err == nil && r.Status == 1 }, 10*time.Second, 10*time.Millisecond)

	refs, err := a.LatestCheckpoints(ctx)
	require.NoError(t, err)
	assert.Empty(t, refs, "a plain transfer is no anchor")

	const key = 0x1234abcd
	own := receipt.CheckpointRef{KeyHash: key, Size: 122, Root: randomRoot(t)}
	j := chaintest.NewJournal()
	_, err = a.Submit(ctx, chains.Anchor{BatchID: 1, Root: own.Root, Checkpoint: &own}, j)
	require.NoError(t, err)
	waitState(t, a, j, 1, chains.Final, 20*time.Second)

	var last *types.Transaction
	for i := range 70 {
		claim := receipt.CheckpointRef{KeyHash: key, Size: 1_000_000_000 + uint64(i), Root: randomRoot(t)}
		last = types.MustSignNewTx(other, signer, &types.DynamicFeeTx{
			ChainID: chainID, Nonce: uint64(i), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e10), Gas: 100_000, To: &keeper,
			Data: receipt.EVMCheckpointCalldata(claim),
		})
		require.NoError(t, ec.SendTransaction(ctx, last))
	}
	require.Eventually(t, func() bool { r, err := ec.TransactionReceipt(ctx, last.Hash()); return err == nil && r.Status == 1 }, 20*time.Second, 10*time.Millisecond)

	refs, err = a.LatestCheckpoints(ctx)
	require.NoError(t, err)
	assert.Equal(t, []receipt.CheckpointRef{own}, refs)
}
