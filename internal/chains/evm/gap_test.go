package evm_test

import (
	"context"
	"log/slog"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/retry"
)

// gapResubmit is the tests' ResubmitTimeout: short, so a gap is acted on fast.
const gapResubmit = 1500 * time.Millisecond

// anvilCall makes one JSON-RPC call to anvil.
func anvilCall(t *testing.T, url string, out any, method string, args ...any) {
	t.Helper()
	rc, err := rpc.Dial(url)
	require.NoError(t, err)
	defer rc.Close()
	require.NoError(t, rc.CallContext(context.Background(), out, method, args...), method)
}

// mineEvery mines a block every interval until the test ends (anvil runs
// with --no-mining, so the test decides when blocks come).
func mineEvery(t *testing.T, url string, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc, err := rpc.Dial(url)
		if err != nil {
			return
		}
		defer rc.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
				_ = rc.CallContext(ctx, nil, "evm_mine")
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// anvilAdapter is an adapter on the anvil node at url, reading the time
// from clock (nil: the wall clock).
func anvilAdapter(t *testing.T, url string, clock *testkit.Clock) (*evm.Adapter, *testkit.SyncBuffer) {
	t.Helper()
	key, err := crypto.HexToECDSA(anvilKey0[2:])
	require.NoError(t, err)
	logs := &testkit.SyncBuffer{}
	cfg := evm.Config{
		RPCURL:          url,
		Key:             key,
		ChainID:         42793,
		Confirmations:   1,
		ResubmitTimeout: gapResubmit,
		PollInterval:    50 * time.Millisecond,
		Logger:          slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if clock != nil {
		evm.SetClock(&cfg, clock.Now)
	}
	a, err := evm.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a, logs
}

// submitBatches submits batches first..last, one fresh root each.
func submitBatches(t *testing.T, a *evm.Adapter, j chains.Journal, roots map[int64][32]byte, first, last int64) {
	t.Helper()
	for id := first; id <= last; id++ {
		roots[id] = randomRoot(t)
		_, err := a.Submit(context.Background(), chains.Anchor{BatchID: id, Root: roots[id]}, j)
		require.NoError(t, err, "batch %d", id)
	}
}

// pooledBatches starts anvil without mining and an adapter on it reading
// clock (nil: the wall clock), and submits batches 1..n: nonces 0..n-1, pooled.
func pooledBatches(t *testing.T, n int64, clock *testkit.Clock) (string, *evm.Adapter, *testkit.SyncBuffer, *chaintest.Journal, map[int64][32]byte) {
	t.Helper()
	url, _ := runAnvil(t, testkit.FreePort(t), "--no-mining")
	a, logs := anvilAdapter(t, url, clock)
	j := chaintest.NewJournal()
	roots := map[int64][32]byte{}
	submitBatches(t, a, j, roots, 1, n)
	return url, a, logs, j, roots
}

// confirmAll plays AnchorBatch for every batch: Status until Final, and
// Submit again whenever Status says Dropped. The batches are visited highest
// first, so a later nonce's Submit comes before its gap's own batch's.
func confirmAll(t *testing.T, a *evm.Adapter, j chains.Journal, roots map[int64][32]byte, within time.Duration) map[int64]string {
	t.Helper()
	ctx := context.Background()
	final := map[int64]string{}
	ids := make([]int64, 0, len(roots))
	for id := range roots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	deadline := time.Now().Add(within)
	for len(final) < len(roots) {
		require.True(t, time.Now().Before(deadline), "confirmed %d of %d batches within %s", len(final), len(roots), within)
		for _, id := range ids {
			if _, ok := final[id]; ok {
				continue
			}
			st, err := a.Status(ctx, id, j)
			require.NoError(t, err)
			switch st.State {
			case chains.Final:
				final[id] = st.Ref
			case chains.Failed:
				t.Fatalf("batch %d failed: %s", id, st.Detail)
			case chains.Dropped:
				_, err := a.Submit(ctx, chains.Anchor{BatchID: id, Root: roots[id]}, j)
				require.False(t, retry.IsPermanent(err), "batch %d: %v", id, err)
			}
		}
	}
	return final
}

// requireEachNonceCarriesOneAnchor reads every block: the signer's mined
// transactions are exactly one per batch, each carrying its batch's root (so
// no batch was anchored twice and no nonce went to anything else), the refs
// Status reported are those transactions, and the signer's nonce is their count.
func requireEachNonceCarriesOneAnchor(t *testing.T, url string, from common.Address, roots map[int64][32]byte, final map[int64]string) {
	t.Helper()
	var head hexutil.Uint64
	anvilCall(t, url, &head, "eth_blockNumber")
	byRoot := map[[32]byte]common.Hash{}
	nonces := map[uint64]bool{}
	for b := uint64(0); b <= uint64(head); b++ {
		var blk struct {
			Transactions []struct {
				Hash  common.Hash    `json:"hash"`
				From  common.Address `json:"from"`
				Nonce hexutil.Uint64 `json:"nonce"`
				Input hexutil.Bytes  `json:"input"`
			} `json:"transactions"`
		}
		anvilCall(t, url, &blk, "eth_getBlockByNumber", hexutil.EncodeUint64(b), true)
		for _, tx := range blk.Transactions {
			if tx.From != from {
				continue
			}
			require.False(t, nonces[uint64(tx.Nonce)], "nonce %d mined twice", tx.Nonce)
			nonces[uint64(tx.Nonce)] = true
			payload, err := evm.ParsePayload(tx.Input)
			root := payload.Root
			require.NoError(t, err, "the signer's transaction %s at nonce %d is an anchor", tx.Hash, tx.Nonce)
			_, dup := byRoot[root]
			require.False(t, dup, "root %x anchored twice", root)
			byRoot[root] = tx.Hash
		}
	}
	require.Len(t, byRoot, len(roots), "one mined anchor per batch")
	for id, root := range roots {
		assert.Equal(t, byRoot[root].Hex(), final[id], "batch %d's final ref is its mined anchor", id)
	}
	var n hexutil.Uint64
	anvilCall(t, url, &n, "eth_getTransactionCount", from, "latest")
	assert.EqualValues(t, len(roots), n, "the signer's nonce is the number of confirmed anchors")
}

func TestSubmitFillsANonceGapLeftByANodeThatRestartedFromAnOlderStateByRebroadcastingTheJournal(t *testing.T) {
	port := testkit.FreePort(t)
	url, stop := runAnvil(t, port, "--no-mining")
	a, logs := anvilAdapter(t, url, nil)
	j := chaintest.NewJournal()
	roots := map[int64][32]byte{}

	submitBatches(t, a, j, roots, 1, 2) // nonces 0, 1
	anvilCall(t, url, nil, "evm_mine")
	var dump hexutil.Bytes
	anvilCall(t, url, &dump, "anvil_dumpState")
	submitBatches(t, a, j, roots, 3, 6) // nonces 2..5: pooled, not in the dump

	// The node comes back on the same address from the state it had with
	// two transactions mined, and has never seen nonces 2..5.
	stop()
	url2, _ := runAnvil(t, port, "--no-mining")
	require.Equal(t, url, url2)
	var loaded bool
	anvilCall(t, url, &loaded, "anvil_loadState", dump)
	require.True(t, loaded)
	var n hexutil.Uint64
	anvilCall(t, url, &n, "eth_getTransactionCount", a.Address(), "pending")
	require.EqualValues(t, 2, n, "the restarted node knows nonces 0 and 1 only")
	mineEvery(t, url, 200*time.Millisecond)

	final := confirmAll(t, a, j, roots, 60*time.Second)
	requireEachNonceCarriesOneAnchor(t, url, a.Address(), roots, final)
	assert.Positive(t, a.NonceGapRebroadcasts(), "the gap was filled from the journal")
	assert.Contains(t, logs.String(), "nonce gap")
}

func TestSubmitFillsANonceGapByRebroadcastingTheDroppedMiddleNonceBeforeBumpingAnyLaterOne(t *testing.T) {
	clock := &testkit.Clock{}
	url, a, _, j, roots := pooledBatches(t, 5, clock) // nonces 0..4

	dropped := j.Records(3)[0].Ref // nonce 2
	anvilCall(t, url, nil, "anvil_dropTransaction", dropped)
	anvilCall(t, url, nil, "evm_mine")
	var n hexutil.Uint64
	anvilCall(t, url, &n, "eth_getTransactionCount", a.Address(), "latest")
	require.EqualValues(t, 2, n, "nonces 3 and 4 wait behind the dropped nonce 2")

	// The last batch is the first to be resubmitted: its Submit finds the
	// gap and rebroadcasts the journaled nonce 2 (and 3) instead of bumping.
	clock.Advance(gapResubmit)
	ref5, err := a.Submit(context.Background(), chains.Anchor{BatchID: 5, Root: roots[5]}, j)
	require.NoError(t, err)
	assert.Equal(t, j.Records(5)[0].Ref, ref5)
	var pooled *struct {
		Hash common.Hash `json:"hash"`
	}
	anvilCall(t, url, &pooled, "eth_getTransactionByHash", dropped)
	require.NotNil(t, pooled, "the dropped transaction is back in the pool")
	mineEvery(t, url, 200*time.Millisecond)

	final := confirmAll(t, a, j, roots, 60*time.Second)
	requireEachNonceCarriesOneAnchor(t, url, a.Address(), roots, final)
	for id := range roots {
		assert.Len(t, j.Records(id), 1, "batch %d: the gap was filled with the journaled transaction; nothing was re-signed", id)
	}
	assert.Equal(t, dropped, final[3], "the dropped transaction itself filled the gap")
}

func TestASignerWhoseNonceWasTakenByATransactionKeeperNeverSignedStopsWithAPermanentError(t *testing.T) {
	url, a, logs, j, roots := pooledBatches(t, 1, nil) // nonce 0
	ours := j.Records(1)[0].Ref

	// Someone else signs nonce 0 with the same key (a plain transfer) and it
	// is mined instead of keeper's anchor.
	anvilCall(t, url, nil, "anvil_dropTransaction", ours)
	key, err := crypto.HexToECDSA(anvilKey0[2:])
	require.NoError(t, err)
	ec := client(t, url)
	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	chainID := big.NewInt(42793)
	stranger, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{
		ChainID: chainID, Nonce: 0, GasTipCap: big.NewInt(2e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: big.NewInt(1),
	}), types.LatestSignerForChainID(chainID), key)
	require.NoError(t, err)
	require.NoError(t, ec.SendTransaction(context.Background(), stranger))
	anvilCall(t, url, nil, "evm_mine")
	require.EqualValues(t, 1, latestNonce(t, ec, a.Address()))
	require.NoError(t, a.Ping(context.Background()))

	ctx := context.Background()
	var subErr error
	require.Eventually(t, func() bool {
		st, err := a.Status(ctx, 1, j)
		require.NoError(t, err)
		if st.State != chains.Dropped {
			return false
		}
		_, subErr = a.Submit(ctx, chains.Anchor{BatchID: 1, Root: roots[1]}, j)
		return subErr != nil
	}, 30*time.Second, 20*time.Millisecond, "Submit refuses once the taken nonce is seen")
	require.True(t, retry.IsPermanent(subErr), "not retried: %v", subErr)
	msg := subErr.Error()
	assert.Contains(t, msg, a.Address().Hex(), "names the signer")
	assert.Contains(t, msg, "nonce 0", "names keeper's nonce")
	assert.Contains(t, msg, "nonce is 1", "names the node's nonce")
	assert.Contains(t, msg, stranger.Hash().Hex(), "names the transaction that took it")

	perr := a.Ping(ctx)
	require.Error(t, perr, "readiness fails")
	assert.Contains(t, perr.Error(), a.Address().Hex())
	_, err = a.Submit(ctx, chains.Anchor{BatchID: 2, Root: randomRoot(t)}, j)
	require.Error(t, err, "the stopped signer signs nothing more")
	assert.True(t, retry.IsPermanent(err))
	assert.Empty(t, j.Records(2))
	assert.Contains(t, logs.String(), "signer stopped")
}
