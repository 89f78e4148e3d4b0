package evm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt/verify"
)

func TestAnAnchoredBatchBecomesFinalCarriesItsRootAndIsNeverSentTwice(t *testing.T) {
	c := startChain(t, devchain.Options{FinalityDepth: 4})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)
	nonceBefore := latestNonce(t, ec, a.Address())

	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 7, Root: root}, j)
	require.NoError(t, err)
	assert.Regexp(t, `^0x[0-9a-f]{64}$`, ref)

	sawIncluded := false
	st := waitFor(t, a, j, 7, func(st chains.Status) bool {
		if st.State == chains.Pending && st.Block > 0 {
			sawIncluded = true
		}
		return st.State == chains.Final
	}, "final", 10*time.Second)
	assert.True(t, sawIncluded, "included but not yet final is reported pending, with its block")
	assert.Equal(t, ref, st.Ref)
	assert.NotZero(t, st.Block)
	assert.LessOrEqual(t, st.Block, c.Finalized(), "final means at or below the node's finalized block")
	assert.False(t, st.BlockTime.IsZero())

	tx, pending, err := ec.TransactionByHash(ctx, common.HexToHash(ref))
	require.NoError(t, err)
	assert.False(t, pending)
	assert.Equal(t, evm.Payload(root), tx.Data())
	assert.Equal(t, append([]byte("keeper:v1:"), root[:]...), tx.Data())
	assert.Equal(t, a.Address(), *tx.To(), "anchors go to the signer itself by default")
	assert.Zero(t, tx.Value().Sign())
	assert.Equal(t, uint8(types.DynamicFeeTxType), tx.Type())

	again, err := a.Submit(ctx, chains.Anchor{BatchID: 7, Root: root}, j)
	require.NoError(t, err)
	assert.Equal(t, ref, again, "a second submit of the batch returns the anchored transaction")
	assert.Len(t, j.Records(7), 1)
	waitBlocks(t, ec, 3) // in case anything else was sent
	assert.Equal(t, nonceBefore+1, latestNonce(t, ec, a.Address()), "exactly one transaction was sent")

	var meta map[string]any
	require.NoError(t, json.Unmarshal(j.Records(7)[0].Meta, &meta))
	assert.EqualValues(t, nonceBefore, meta["nonce"])
	assert.NotEmpty(t, meta["max_fee_per_gas"])
	assert.NotEmpty(t, meta["max_priority_fee_per_gas"])

	v, err := verify.EVM(ctx, c.URL(), ref)
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.True(t, v.Succeeded)
	assert.True(t, v.Final)
	assert.Equal(t, root, v.Root)
	assert.Equal(t, st.Block, v.Block)
}

func TestVerifyTxSaysAnUnknownHashIsNotFoundAndAPlainTransferIsNoAnchor(t *testing.T) {
	c := startChain(t, devchain.Options{})
	ctx := context.Background()

	unknown := randomRoot(t)
	v, err := verify.EVM(ctx, c.URL(), common.Hash(unknown).Hex())
	require.NoError(t, err)
	assert.False(t, v.Found)
	assert.Contains(t, v.Detail, "not known")

	ec := client(t, c.URL())
	key := devKey(t, c)
	to := common.HexToAddress("0x00000000000000000000000000000000000000bb")
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(big.NewInt(devchain.DefaultChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(devchain.DefaultChainID), Nonce: 0, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e10), Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	require.NoError(t, ec.SendTransaction(ctx, tx))
	v, err = verify.EVM(ctx, c.URL(), tx.Hash().Hex())
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.False(t, v.HasPayload, "a plain transfer carries no keeper payload")
	assert.Contains(t, v.Detail, "no keeper anchor payload")

	_, err = verify.EVM(ctx, c.URL(), "0x1234")
	assert.ErrorContains(t, err, "not a transaction hash")
}

func TestARetryAfterACrashBetweenJournalAndBroadcastSendsTheSameTransaction(t *testing.T) {
	c := startChain(t, devchain.Options{})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	j := chaintest.NewJournal()
	root := randomRoot(t)
	nonceBefore := latestNonce(t, ec, a.Address())

	// The "crash": the record is saved, then the activity dies before broadcasting.
	ctx, cancel := context.WithCancel(context.Background())
	j.SetAfterSave(func(chains.TxRecord) error { cancel(); return nil })
	_, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err), "a crash is retried")
	require.Len(t, j.Records(1), 1)
	journaled := j.Records(1)[0]
	_, _, err = ec.TransactionByHash(context.Background(), common.HexToHash(journaled.Ref))
	require.ErrorIs(t, err, ethereum.NotFound, "nothing reached the node")

	j.SetAfterSave(nil)
	ref, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	assert.Equal(t, journaled.Ref, ref, "the retry broadcast the journaled transaction")
	assert.Len(t, j.Records(1), 1, "and signed nothing new")
	onChain, _, err := ec.TransactionByHash(context.Background(), common.HexToHash(ref))
	require.NoError(t, err)
	raw, err := onChain.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, journaled.Raw, raw, "byte for byte")

	waitState(t, a, j, 1, chains.Final, 10*time.Second)
	assert.Equal(t, nonceBefore+1, latestNonce(t, ec, a.Address()))
}

func TestAStuckTransactionIsDroppedThenResubmittedOnTheSameNonceWithFeesUpTenPercent(t *testing.T) {
	c := startChain(t, devchain.Options{})
	a, logs := newAdapter(t, c, func(cfg *evm.Config) { cfg.ResubmitTimeout = 400 * time.Millisecond })
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)
	nonceBefore := latestNonce(t, ec, a.Address())

	c.PauseMining()
	first, err := a.Submit(ctx, chains.Anchor{BatchID: 3, Root: root}, j)
	require.NoError(t, err)
	st, err := a.Status(ctx, 3, j)
	require.NoError(t, err)
	assert.Equal(t, chains.Pending, st.State, "young and unmined: pending")

	dropped := waitState(t, a, j, 3, chains.Dropped, 5*time.Second)
	assert.Equal(t, first, dropped.Ref)
	assert.Contains(t, dropped.Detail, "no receipt")

	second, err := a.Submit(ctx, chains.Anchor{BatchID: 3, Root: root}, j)
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "re-signed")
	recs := j.Records(3)
	require.Len(t, recs, 2)
	oldTx, newTx := decodeTx(t, recs[0].Raw), decodeTx(t, recs[1].Raw)
	assert.Equal(t, oldTx.Nonce(), newTx.Nonce(), "same nonce: it replaces, never adds")
	assert.True(t, atLeastTenPercentMore(newTx.GasFeeCap(), oldTx.GasFeeCap()), "max fee %s -> %s", oldTx.GasFeeCap(), newTx.GasFeeCap())
	assert.True(t, atLeastTenPercentMore(newTx.GasTipCap(), oldTx.GasTipCap()), "tip %s -> %s", oldTx.GasTipCap(), newTx.GasTipCap())
	assert.Equal(t, oldTx.Data(), newTx.Data())
	assert.Contains(t, string(recs[1].Meta), `"reason":"fee_bump"`)
	assert.Contains(t, logs.String(), "bumping fees")

	// The pool took the replacement: the node now holds the new transaction only.
	_, _, err = ec.TransactionByHash(ctx, common.HexToHash(first))
	assert.ErrorIs(t, err, ethereum.NotFound)
	_, pending, err := ec.TransactionByHash(ctx, common.HexToHash(second))
	require.NoError(t, err)
	assert.True(t, pending)

	c.ResumeMining()
	st = waitState(t, a, j, 3, chains.Final, 10*time.Second)
	assert.Equal(t, second, st.Ref)
	assert.Equal(t, nonceBefore+1, latestNonce(t, ec, a.Address()))
}

func TestAnEvictedTransactionIsRebroadcastUnchanged(t *testing.T) {
	c := startChain(t, devchain.Options{})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)

	c.PauseMining()
	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 4, Root: root}, j)
	require.NoError(t, err)
	require.Equal(t, 1, c.DropPending())
	_, _, err = ec.TransactionByHash(ctx, common.HexToHash(ref))
	require.ErrorIs(t, err, ethereum.NotFound)

	again, err := a.Submit(ctx, chains.Anchor{BatchID: 4, Root: root}, j)
	require.NoError(t, err)
	assert.Equal(t, ref, again)
	_, pending, err := ec.TransactionByHash(ctx, common.HexToHash(ref))
	require.NoError(t, err)
	assert.True(t, pending, "back in the pool")

	c.ResumeMining()
	st := waitState(t, a, j, 4, chains.Final, 10*time.Second)
	assert.Equal(t, ref, st.Ref)
}

func TestAReorganisedAnchorIsNotFinalUntilItLandsAgain(t *testing.T) {
	c := startChain(t, devchain.Options{BlockTime: time.Hour, FinalityDepth: 4}) // blocks only on demand
	a, _ := newAdapter(t, c, nil)
	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)

	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 5, Root: root}, j)
	require.NoError(t, err)
	require.NoError(t, c.Mine(1))
	st := waitFor(t, a, j, 5, func(st chains.Status) bool {
		return st.State == chains.Pending && st.Block > 0 && strings.Contains(st.Detail, "finalized")
	}, "included and checked canonical", 3*time.Second)
	includedAt := st.Block

	// The block holding the anchor is replaced by a fork that does not carry it.
	require.NoError(t, c.Reorg(int(c.Head()-includedAt+1), false))
	require.NoError(t, c.Mine(6))
	st, err = a.Status(ctx, 5, j)
	require.NoError(t, err)
	assert.Equal(t, chains.Pending, st.State, "deep enough to be final, but no longer on the chain")
	assert.Zero(t, st.Block)

	// The workflow's retry rebroadcasts the same transaction, which lands again.
	again, err := a.Submit(ctx, chains.Anchor{BatchID: 5, Root: root}, j)
	require.NoError(t, err)
	assert.Equal(t, ref, again)
	require.NoError(t, c.Mine(1))
	landed := c.Head()
	require.NoError(t, c.Mine(4))
	st = waitState(t, a, j, 5, chains.Final, 3*time.Second)
	assert.Equal(t, ref, st.Ref)
	assert.Equal(t, landed, st.Block)
}

func TestAReorgThatMovesTheAnchorToAnotherBlockReportsTheNewBlock(t *testing.T) {
	c := startChain(t, devchain.Options{BlockTime: time.Hour, FinalityDepth: 4})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal()

	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 6, Root: randomRoot(t)}, j)
	require.NoError(t, err)
	require.NoError(t, c.Mine(2))
	before, err := ec.TransactionReceipt(ctx, common.HexToHash(ref))
	require.NoError(t, err)
	waitState(t, a, j, 6, chains.Pending, time.Second) // the adapter has seen it in its first block

	require.NoError(t, c.Reorg(2, true)) // the anchor goes back to the pool and into a new block
	require.NoError(t, c.Mine(4))
	after, err := ec.TransactionReceipt(ctx, common.HexToHash(ref))
	require.NoError(t, err)
	require.NotEqual(t, before.BlockHash, after.BlockHash)

	st := waitState(t, a, j, 6, chains.Final, 3*time.Second)
	assert.Equal(t, after.BlockNumber.Uint64(), st.Block)
	blk, err := ec.HeaderByNumber(ctx, after.BlockNumber)
	require.NoError(t, err)
	assert.Equal(t, time.Unix(int64(blk.Time), 0).UTC(), st.BlockTime)
}

func TestFiftyConcurrentBatchesGetConsecutiveNoncesAndAllBecomeFinal(t *testing.T) {
	c := startChain(t, devchain.Options{})
	a, _ := newAdapter(t, c, nil)
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal()
	start := latestNonce(t, ec, a.Address())

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := a.Submit(ctx, chains.Anchor{BatchID: int64(100 + i), Root: randomRoot(t)}, j); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	var nonces []uint64
	for i := range n {
		recs := j.Records(int64(100 + i))
		require.Len(t, recs, 1)
		nonces = append(nonces, decodeTx(t, recs[0].Raw).Nonce())
	}
	sort.Slice(nonces, func(x, y int) bool { return nonces[x] < nonces[y] })
	for i, got := range nonces {
		require.Equal(t, start+uint64(i), got, "nonces are consecutive with no gap or double: %v", nonces)
	}

	var fin sync.WaitGroup
	for i := range n {
		fin.Go(func() { waitState(t, a, j, int64(100+i), chains.Final, 20*time.Second) })
	}
	fin.Wait()
	assert.Equal(t, start+n, latestNonce(t, ec, a.Address()))
}

// rpcCounter is a reverse proxy in front of the node counting JSON-RPC
// requests and the receipt lookups each carries.
type rpcCounter struct {
	requests         atomic.Int64
	maxReceiptsInOne atomic.Int64
	rewrite          func(body string) string // optional: alters requests on their way to the node
}

func (rc *rpcCounter) serve(t *testing.T, target string) string {
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var batch []struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &batch) == nil {
			n := int64(0)
			for _, m := range batch {
				if m.Method == "eth_getTransactionReceipt" {
					n++
				}
			}
			if n > 0 {
				rc.requests.Add(1)
				for {
					cur := rc.maxReceiptsInOne.Load()
					if n <= cur || rc.maxReceiptsInOne.CompareAndSwap(cur, n) {
						break
					}
				}
			}
		}
		if rc.rewrite != nil {
			body = []byte(rc.rewrite(string(body)))
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAThousandInFlightStatusLookupsCostOneBatchCallPerHundredHashesPerRound(t *testing.T) {
	c := startChain(t, devchain.Options{})
	counter := &rpcCounter{}
	proxied := counter.serve(t, c.URL())
	a, _ := newAdapter(t, c, func(cfg *evm.Config) {
		cfg.RPCURL = proxied
		cfg.MaxBatch = 100
		cfg.PollInterval = time.Hour // rounds run only when the test says
	})
	j := chaintest.NewJournal()

	// 1,000 batches awaiting finality, each with a signed transaction the
	// node has never seen (so every lookup stays pending).
	key := devKey(t, c)
	signer := types.LatestSignerForChainID(big.NewInt(devchain.DefaultChainID))
	const n = 1000
	for i := range n {
		to := a.Address()
		tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
			ChainID: big.NewInt(devchain.DefaultChainID), Nonce: 1_000_000 + uint64(i), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1), Gas: 30000, To: &to, Data: evm.Payload(randomRoot(t)),
		})
		raw, err := tx.MarshalBinary()
		require.NoError(t, err)
		require.NoError(t, j.SaveTransaction(context.Background(), chains.TxRecord{BatchID: int64(i), Chain: evm.Name, Ref: tx.Hash().Hex(), Raw: raw, CreatedAt: time.Now()}))
	}

	round := func() {
		t.Helper()
		readsBefore := j.Reads()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				st, err := a.Status(context.Background(), int64(i), j)
				assert.NoError(t, err)
				assert.Equal(t, chains.Pending, st.State)
			})
		}
		require.Eventually(t, func() bool { return j.Reads()-readsBefore == n }, 5*time.Second, time.Millisecond)
		require.Eventually(t, func() bool { return a.WaitingLookups() == n }, 5*time.Second, time.Millisecond, "every lookup waits in the poller")
		a.PollNow()
		wg.Wait()
	}
	round()
	assert.Equal(t, int64(10), a.StatusCalls(), "ceil(1000/100) calls for one round")
	assert.Equal(t, int64(10), counter.requests.Load(), "each call is one JSON-RPC batch request")
	assert.Equal(t, int64(100), counter.maxReceiptsInOne.Load())

	round()
	assert.Equal(t, int64(20), a.StatusCalls())
	assert.Equal(t, int64(20), counter.requests.Load())
	assert.Equal(t, int64(2), a.StatusRounds())
}

func TestANodeOnAnotherChainIsRefusedAtNew(t *testing.T) {
	c := startChain(t, devchain.Options{})
	_, err := evm.New(context.Background(), evm.Config{RPCURL: c.URL(), Key: devKey(t, c), ChainID: 1})
	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err))
	assert.Contains(t, err.Error(), "configured 1")
	assert.Contains(t, err.Error(), fmt.Sprint("reports ", devchain.DefaultChainID))
}

func TestMissingURLOrKeyIsAPermanentConfigurationError(t *testing.T) {
	_, err := evm.New(context.Background(), evm.Config{Key: mustKey(t)})
	assert.True(t, retry.IsPermanent(err))
	assert.ErrorContains(t, err, "RPCURL")
	_, err = evm.New(context.Background(), evm.Config{RPCURL: "http://127.0.0.1:1"})
	assert.True(t, retry.IsPermanent(err))
	assert.ErrorContains(t, err, "Key")
}

func TestAnUnfundedSignerFailsToSubmitWithARetryableError(t *testing.T) {
	c := startChain(t, devchain.Options{})
	poor := mustKey(t)
	a, _ := newAdapter(t, c, func(cfg *evm.Config) { cfg.Key = poor })
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 9, Root: randomRoot(t)}, chaintest.NewJournal())
	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err), "funding the signer fixes it")
	assert.Contains(t, strings.ToLower(err.Error()), "insufficient funds")
}

func TestTheKeyNeverAppearsInErrorsLogsOrPrintedConfig(t *testing.T) {
	c := startChain(t, devchain.Options{})
	key := devKey(t, c)
	secret := keyHex(key)
	forms := []string{secret, strings.ToUpper(secret), "0x" + secret}
	var texts []string
	check := func(what, s string) {
		t.Helper()
		for _, f := range forms {
			require.NotContains(t, s, f, "%s leaks the key", what)
		}
		texts = append(texts, s)
	}

	// Logs of a full anchoring, a fee bump and a rebroadcast, at debug level.
	a, logs := newAdapter(t, c, func(cfg *evm.Config) { cfg.ResubmitTimeout = 300 * time.Millisecond })
	j := chaintest.NewJournal()
	root := randomRoot(t)
	c.PauseMining()
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	waitState(t, a, j, 1, chains.Dropped, 5*time.Second)
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	c.ResumeMining()
	waitState(t, a, j, 1, chains.Final, 10*time.Second)
	require.NotEmpty(t, logs.String())

	// Errors: wrong chain, an endpoint whose URL embeds the key, a bad key file, a rejected submit.
	_, err = evm.New(context.Background(), evm.Config{RPCURL: c.URL(), Key: key, ChainID: 5})
	require.Error(t, err)
	check("chain id error", err.Error())
	_, err = evm.New(context.Background(), evm.Config{RPCURL: "http://127.0.0.1:1/" + secret, Key: key})
	require.Error(t, err)
	check("dial error", err.Error())
	bad := t.TempDir() + "/bad.key"
	require.NoError(t, writeFile(bad, secret[:63]+"z"))
	_, err = evm.LoadKey(bad)
	require.Error(t, err)
	check("key file error", err.Error())
	require.NoError(t, writeFile(bad, secret+"00"))
	_, err = evm.LoadKey(bad)
	require.Error(t, err)
	check("key file error", err.Error())
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: randomRoot(t)}, j)
	require.Error(t, err, "the journaled transaction anchors another root")
	check("submit error", err.Error())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.Status(cancelled, 1, j)
	require.Error(t, err)
	check("status error", err.Error())

	cfg := evm.Config{RPCURL: c.URL(), Key: key}
	check("printed config", fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg))
	check("printed adapter", fmt.Sprintf("%v %+v %s", a, a, a))
	check("logs", logs.String())
	assert.Contains(t, fmt.Sprint(cfg), "redacted")
	assert.GreaterOrEqual(t, len(texts), 8)
}

func TestFeesAreCappedByTheCeilingAndAStuckTransactionAtTheCeilingIsRebroadcastNotResigned(t *testing.T) {
	c := startChain(t, devchain.Options{BlockTime: time.Hour}) // blocks on demand: the base fee holds still
	ceiling := big.NewInt(1_000_000_000)                       // 1 gwei, below 2×base fee + tip here
	a, logs := newAdapter(t, c, func(cfg *evm.Config) {
		cfg.FeeCeiling = ceiling
		cfg.ResubmitTimeout = 300 * time.Millisecond
	})
	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)

	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	tx := decodeTx(t, j.Records(1)[0].Raw)
	assert.Equal(t, ceiling, tx.GasFeeCap(), "max fee per gas is capped")
	assert.LessOrEqual(t, tx.GasTipCap().Cmp(ceiling), 0)

	waitState(t, a, j, 1, chains.Dropped, 5*time.Second)
	again, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	assert.Equal(t, ref, again, "no room under the ceiling for a +10 % replacement")
	assert.Len(t, j.Records(1), 1)
	assert.Contains(t, logs.String(), "fee ceiling reached")
	st, err := a.Status(ctx, 1, j)
	require.NoError(t, err)
	assert.Equal(t, chains.Pending, st.State, "just resent: not dropped again before another timeout")

	require.NoError(t, c.Mine(5))
	st = waitState(t, a, j, 1, chains.Final, 3*time.Second)
	assert.Equal(t, ref, st.Ref)
}

func TestANodeWithoutMaxPriorityFeePerGasIsPricedFromTheGasPrice(t *testing.T) {
	c := startChain(t, devchain.Options{})
	proxy := &rpcCounter{rewrite: func(body string) string {
		return strings.ReplaceAll(body, `"eth_maxPriorityFeePerGas"`, `"eth_noSuchMethod"`)
	}}
	a, _ := newAdapter(t, c, func(cfg *evm.Config) { cfg.RPCURL = proxy.serve(t, c.URL()) })
	j := chaintest.NewJournal()
	ref, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: randomRoot(t)}, j)
	require.NoError(t, err)
	tx := decodeTx(t, j.Records(1)[0].Raw)
	assert.Positive(t, tx.GasTipCap().Sign(), "tip = gas price − base fee")
	st := waitState(t, a, j, 1, chains.Final, 10*time.Second)
	assert.Equal(t, ref, st.Ref)
}
