package devchain_test

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/receipt"
)

func start(t *testing.T, o devchain.Options) *devchain.Chain {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	c, err := devchain.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func dial(t *testing.T, url string) *ethclient.Client {
	t.Helper()
	rc, err := rpc.Dial(url)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return ethclient.NewClient(rc)
}

func finalized(t *testing.T, ec *ethclient.Client) uint64 {
	t.Helper()
	h, err := ec.HeaderByNumber(context.Background(), big.NewInt(int64(rpc.FinalizedBlockNumber)))
	require.NoError(t, err)
	return h.Number.Uint64()
}

func TestTheChainServesItsOwnChainIDOverHTTPAndProducesBlocks(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: 20 * time.Millisecond, AheadOfClock: true})
	ec := dial(t, c.URL())
	id, err := ec.ChainID(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(receipt.LocalEVMChainID), id.Uint64(), "keeper dev's local chain, not EtherLink mainnet's 42793")
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, c.URL())
	require.Eventually(t, func() bool {
		n, err := ec.BlockNumber(context.Background())
		return err == nil && n >= 3
	}, 5*time.Second, 10*time.Millisecond)
}

func TestTheDevKeyIsFundedWrittenWithMode0600AndReusedOnRestart(t *testing.T) {
	dir := t.TempDir()
	c := start(t, devchain.Options{Dir: dir, BlockTime: 20 * time.Millisecond, AheadOfClock: true})
	st, err := os.Stat(filepath.Join(dir, devchain.KeyFileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.Equal(t, filepath.Join(dir, devchain.KeyFileName), c.KeyFile())

	raw, err := os.ReadFile(c.KeyFile())
	require.NoError(t, err)
	key, err := crypto.HexToECDSA(string(raw[:64]))
	require.NoError(t, err)
	assert.Equal(t, c.Address(), crypto.PubkeyToAddress(key.PublicKey))

	bal, err := dial(t, c.URL()).BalanceAt(context.Background(), c.Address(), nil)
	require.NoError(t, err)
	assert.Equal(t, 0, bal.Cmp(devchain.DevBalance))

	first := c.Address()
	require.NoError(t, c.Stop())
	again := start(t, devchain.Options{Dir: dir, BlockTime: 20 * time.Millisecond, AheadOfClock: true})
	assert.Equal(t, first, again.Address())
}

func TestTheFinalizedBlockLagsTheHeadByTheFinalityDepth(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: time.Hour, FinalityDepth: 5})
	ec := dial(t, c.URL())
	assert.Equal(t, uint64(0), finalized(t, ec), "genesis is final from the start")

	require.NoError(t, c.Mine(3))
	assert.Equal(t, uint64(0), finalized(t, ec), "nothing but genesis is 5 blocks deep yet")
	require.NoError(t, c.Mine(9))
	head, err := ec.BlockNumber(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(13), head)
	assert.Equal(t, uint64(8), finalized(t, ec))
	assert.Equal(t, uint64(8), c.Finalized())
	for range 40 { // never a block that is final the moment it is sealed
		require.NoError(t, c.Mine(1))
		assert.Equal(t, c.Head()-5, finalized(t, ec))
	}
}

func sendTransfer(t *testing.T, c *devchain.Chain, ec *ethclient.Client, nonce uint64) *types.Transaction {
	t.Helper()
	raw, err := os.ReadFile(c.KeyFile())
	require.NoError(t, err)
	key, err := crypto.HexToECDSA(string(raw[:64]))
	require.NoError(t, err)
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(big.NewInt(int64(c.ChainID()))), &types.DynamicFeeTx{
		ChainID: big.NewInt(int64(c.ChainID())), Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	require.NoError(t, ec.SendTransaction(context.Background(), tx))
	return tx
}

func TestAPausedChainKeepsTransactionsPendingAndDropPendingForgetsThem(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: 20 * time.Millisecond, AheadOfClock: true})
	ec := dial(t, c.URL())
	c.PauseMining()
	head := c.Head()
	tx := sendTransfer(t, c, ec, 0)
	ticks := c.Ticks()
	require.Eventually(t, func() bool { return c.Ticks() >= ticks+5 }, 5*time.Second, time.Millisecond, "the block loop runs on while paused")
	assert.Equal(t, head, c.Head(), "no block while paused")
	_, pending, err := ec.TransactionByHash(context.Background(), tx.Hash())
	require.NoError(t, err)
	assert.True(t, pending)

	assert.Equal(t, 1, c.DropPending())
	_, _, err = ec.TransactionByHash(context.Background(), tx.Hash())
	assert.ErrorIs(t, err, ethereum.NotFound)
	n, err := ec.PendingNonceAt(context.Background(), c.Address())
	require.NoError(t, err)
	assert.Equal(t, uint64(0), n, "the dropped transaction's nonce is free again")

	c.ResumeMining()
	tx = sendTransfer(t, c, ec, 0)
	require.Eventually(t, func() bool {
		r, err := ec.TransactionReceipt(context.Background(), tx.Hash())
		return err == nil && r.Status == types.ReceiptStatusSuccessful
	}, 5*time.Second, 20*time.Millisecond)
}

func TestAReorgMovesARecentTransactionToANewBlockOrDropsIt(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: time.Hour, FinalityDepth: 10})
	ec := dial(t, c.URL())
	ctx := context.Background()
	require.NoError(t, c.Mine(12))

	tx := sendTransfer(t, c, ec, 0)
	require.NoError(t, c.Mine(2))
	before, err := ec.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err)

	require.NoError(t, c.Reorg(3, true))
	after, err := ec.TransactionReceipt(ctx, tx.Hash())
	require.NoError(t, err)
	assert.NotEqual(t, before.BlockHash, after.BlockHash, "the transaction now sits in a different block")
	canon, err := ec.HeaderByNumber(ctx, after.BlockNumber)
	require.NoError(t, err)
	assert.Equal(t, after.BlockHash, canon.Hash())
	old, err := ec.HeaderByNumber(ctx, before.BlockNumber)
	require.NoError(t, err)
	assert.NotEqual(t, before.BlockHash, old.Hash(), "the old block is no longer canonical")

	tx2 := sendTransfer(t, c, ec, 1)
	require.NoError(t, c.Mine(1))
	_, err = ec.TransactionReceipt(ctx, tx2.Hash())
	require.NoError(t, err)
	require.NoError(t, c.Reorg(1, false))
	_, err = ec.TransactionReceipt(ctx, tx2.Hash())
	assert.ErrorIs(t, err, ethereum.NotFound, "a reorg without the transaction removes it from the chain")

	assert.ErrorContains(t, c.Reorg(int(c.Head()), false), "finalized")
}

func TestTheChainListensOnTheGivenPortAndABusyPortIsAnError(t *testing.T) {
	port := testkit.FreePort(t)
	c := start(t, devchain.Options{Port: port, BlockTime: time.Hour})
	assert.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", port), c.URL())

	_, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), Port: port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), strconv.Itoa(port))
}

func TestAPersistedChainContinuesAfterARestart(t *testing.T) {
	dir := t.TempDir()
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, FinalityDepth: 2})
	require.NoError(t, err)
	ec := dial(t, c.URL())
	tx := sendTransfer(t, c, ec, 0)
	require.NoError(t, c.Mine(3))
	head := c.Head()
	require.NoError(t, c.Stop())

	again := start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, FinalityDepth: 2})
	assert.Equal(t, c.Address(), again.Address())
	assert.Greater(t, again.Head(), head, "the chain went on from where it stopped")
	ec = dial(t, again.URL())
	r, err := ec.TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err)
	assert.Equal(t, types.ReceiptStatusSuccessful, r.Status)
	n, err := ec.NonceAt(context.Background(), again.Address(), nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n)
	assert.GreaterOrEqual(t, again.Finalized(), head-2)
}

// A chain an older keeper made with EtherLink mainnet's id holds
// transactions signed for that id: it is refused, never reopened under the
// new one.
func TestAPersistedChainOfAnotherChainIDIsRefused(t *testing.T) {
	dir := t.TempDir()
	old, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, ChainID: devchain.LegacyChainID})
	require.NoError(t, err)
	tx := sendTransfer(t, old, dial(t, old.URL()), 0)
	require.NoError(t, old.Mine(1))
	require.NoError(t, old.Stop())

	_, err = devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour})
	var idErr *devchain.ChainIDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, devchain.ChainIDError{Dir: filepath.Join(dir, "chain"), Stored: devchain.LegacyChainID, Want: receipt.LocalEVMChainID}, *idErr)
	assert.Contains(t, err.Error(), "delete "+filepath.Join(dir, "chain"))

	again := start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, ChainID: devchain.LegacyChainID})
	r, err := dial(t, again.URL()).TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err, "refusing it changed nothing: under its own id the old chain still serves its transactions")
	assert.Equal(t, types.ReceiptStatusSuccessful, r.Status)
}

func TestTheVerifyPageMayCallTheChainFromABrowser(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: time.Hour})
	for _, origin := range []string{"http://127.0.0.1:8080", "null"} { // served by keeper; opened from a file
		req, err := http.NewRequest(http.MethodOptions, c.URL(), nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Less(t, resp.StatusCode, 300, "preflight from %s", origin)
		assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"), "preflight from %s", origin)
		assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
		assert.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type")

		req, err = http.NewRequest(http.MethodPost, c.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"), "answer to %s", origin)
	}
}

func TestAFrozenFinalizedBlockStaysWhileBlocksAreSealedUntilThawed(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: time.Hour, FinalityDepth: 2})
	ec := dial(t, c.URL())
	require.NoError(t, c.Mine(5))
	fin := finalized(t, ec)
	require.Equal(t, c.Head()-2, fin)

	c.FreezeFinality()
	require.NoError(t, c.Mine(10))
	assert.Equal(t, fin, finalized(t, ec), "finalized stays while latest moves")
	assert.Equal(t, fin, c.Finalized())

	c.ThawFinality()
	require.NoError(t, c.Mine(1))
	assert.Equal(t, c.Head()-2, finalized(t, ec), "finality catches up with the next block")
}
