package evm_test

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// behindEtherLinkFees puts the local chain behind a proxy that prices and
// silently drops transactions as EtherLink's sequencer does, with the base
// fee at least minBaseFee.
func behindEtherLinkFees(t *testing.T, c *devchain.Chain, minBaseFee int64) (*rpcfault.Proxy, func(int64)) {
	t.Helper()
	p, err := rpcfault.Start(c.URL(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	set := func(base int64) {
		m := rpcfault.EtherLinkFees()
		m.MinBaseFee = big.NewInt(base)
		p.SetFeeMarket(&m)
	}
	set(minBaseFee)
	return p, set
}

// etherlinkAdapter is an adapter configured as the etherlink presets do,
// for the local chain's 50 ms blocks.
func etherlinkAdapter(t *testing.T, c *devchain.Chain, url string) (*evm.Adapter, *testkit.SyncBuffer) {
	t.Helper()
	return newAdapter(t, c, func(cfg *evm.Config) {
		cfg.RPCURL = url
		cfg.NoTip = true
		cfg.BlockTime = 50 * time.Millisecond
	})
}

func TestOnEtherLinkAnAnchorPaysNoTipAndAGasLimitThatCarriesTheInclusionFee(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, _ := behindEtherLinkFees(t, c, 3*params.GWei)
	a, _ := etherlinkAdapter(t, c, p.URL())
	j := chaintest.NewJournal()
	root := randomRoot(t)

	ref, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	st := waitState(t, a, j, 1, chains.Final, 10*time.Second)
	assert.Equal(t, ref, st.Ref)

	recs := j.Records(1)
	require.Len(t, recs, 1, "signed once: never underpriced")
	tx := decodeTx(t, recs[0].Raw)
	assert.Zero(t, tx.GasTipCap().Sign(), "no tip: EtherLink's sequencer ignores it")
	assert.Equal(t, big.NewInt(6*params.GWei), tx.GasFeeCap(), "twice the node's base fee")
	inclusion := uint64(4e12 * (150 + len(evm.Payload(root))) / (3 * params.GWei))
	assert.Greater(t, tx.Gas(), 21000+inclusion, "the gas limit comes from eth_estimateGas, which carries the inclusion fee")
	assert.Zero(t, p.Stats().Dropped)

	// What one anchor costs (docs/chains.md, Going to mainnet): the execution gas
	// the chain charged, at the base fee, plus EtherLink's inclusion fee.
	rc, err := client(t, c.URL()).TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err)
	tokens := 0 // EIP-7623: a zero calldata byte is 1 token, any other 4
	for _, b := range evm.Payload(root) {
		tokens += 1 + 3*min(int(b), 1)
	}
	assert.EqualValues(t, 21000+10*tokens, rc.GasUsed, "intrinsic gas and the calldata floor of 10 a token: nothing else runs")
	t.Logf("one anchor: %d gas used × %s wei; calldata %d bytes; gas limit %d; inclusion fee %d wei",
		rc.GasUsed, rc.EffectiveGasPrice, len(evm.Payload(root)), tx.Gas(), 4e12*(150+len(evm.Payload(root))))
}

func TestASilentlyDroppedAnchorIsReSignedOnItsNonceWithinSecondsAndLands(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, setBaseFee := behindEtherLinkFees(t, c, params.GWei)
	a, logs := etherlinkAdapter(t, c, p.URL())
	ec := client(t, c.URL())
	nonce := latestNonce(t, ec, a.Address())
	j := chaintest.NewJournal()
	var once sync.Once
	j.SetAfterSave(func(chains.TxRecord) error {
		// Between pricing and broadcast the base fee rises under a backlog:
		// the transaction no longer pays it and the sequencer drops it.
		once.Do(func() { setBaseFee(5 * params.GWei) })
		return nil
	})
	ctx := context.Background()
	an := chains.Anchor{BatchID: 2, Root: randomRoot(t)}

	first, err := a.Submit(ctx, an, j)
	require.NoError(t, err)
	st := waitState(t, a, j, 2, chains.Dropped, 5*time.Second)
	assert.Equal(t, first, st.Ref)
	assert.Contains(t, st.Detail, "does not know", "reported dropped by the node's silence over DropBlocks blocks, not by the 60 s resubmit timeout")
	assert.EqualValues(t, 1, p.Stats().Dropped)

	second, err := a.Submit(ctx, an, j) // as the workflow does after Dropped
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "re-signed")
	final := waitState(t, a, j, 2, chains.Final, 10*time.Second)
	assert.Equal(t, second, final.Ref)

	recs := j.Records(2)
	require.Len(t, recs, 2)
	old, resigned := decodeTx(t, recs[0].Raw), decodeTx(t, recs[1].Raw)
	assert.Equal(t, nonce, old.Nonce())
	assert.Equal(t, old.Nonce(), resigned.Nonce(), "the same nonce: never a second one for the batch")
	assert.Zero(t, resigned.GasTipCap().Sign())
	assert.GreaterOrEqual(t, resigned.GasFeeCap().Int64(), int64(10*params.GWei), "priced on the risen base fee")
	assert.Equal(t, nonce+1, latestNonce(t, ec, a.Address()), "one transaction mined")
	assert.EqualValues(t, 1, p.Stats().Dropped)
	assert.Contains(t, logs.String(), "bumping fees of a transaction without receipt")
	_, _, err = ec.TransactionByHash(ctx, common.HexToHash(first))
	assert.Error(t, err, "the dropped transaction stays unknown")
}

func TestAFinalizedBlockThatStopsWhileLatestMovesFailsPingUntilItMovesAgain(t *testing.T) {
	c := startChain(t, devchain.Options{})
	a, logs := newAdapter(t, c, func(cfg *evm.Config) { cfg.FinalityStall = 300 * time.Millisecond })
	ctx := context.Background()
	require.NoError(t, a.Ping(ctx))

	c.FreezeFinality()
	require.Eventually(t, func() bool { return a.Ping(ctx) != nil }, 5*time.Second, 20*time.Millisecond)
	err := a.Ping(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "finalized block")
	assert.Contains(t, err.Error(), "has not moved")
	assert.Contains(t, err.Error(), "rollup node")
	assert.Error(t, a.FinalityStalled())
	for range 5 {
		_ = a.Ping(ctx)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "finalized block stalled"), "logged once when it starts")

	c.ThawFinality()
	require.Eventually(t, func() bool { return a.Ping(ctx) == nil }, 5*time.Second, 20*time.Millisecond)
	assert.NoError(t, a.FinalityStalled())
	assert.Equal(t, 1, strings.Count(logs.String(), "finalized block moves again"), "logged once when it ends")
}

func TestAChainThatStopsAltogetherIsNoFinalityStall(t *testing.T) {
	c := startChain(t, devchain.Options{BlockTime: time.Hour})
	clock := &testkit.Clock{}
	a, _ := newAdapter(t, c, func(cfg *evm.Config) {
		cfg.FinalityStall = 100 * time.Millisecond
		evm.SetClock(cfg, clock.Now)
	})
	require.NoError(t, a.Ping(context.Background()))
	clock.Advance(time.Hour) // far past FinalityStall
	assert.NoError(t, a.Ping(context.Background()), "neither head moves: nothing to wait on yet")
	assert.NoError(t, a.FinalityStalled())
}

func TestWithoutABlockTimeADroppedAnchorWaitsForTheResubmitTimeoutAsBefore(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, setBaseFee := behindEtherLinkFees(t, c, params.GWei)
	a, _ := newAdapter(t, c, func(cfg *evm.Config) {
		cfg.RPCURL = p.URL()
		cfg.ResubmitTimeout = 2 * time.Second
	})
	j := chaintest.NewJournal()
	var once sync.Once
	j.SetAfterSave(func(chains.TxRecord) error { once.Do(func() { setBaseFee(50 * params.GWei) }); return nil })
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 3, Root: randomRoot(t)}, j)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Stats().Dropped)
	waitBlocks(t, client(t, c.URL()), 20)
	st, err := a.Status(context.Background(), 3, j)
	require.NoError(t, err)
	assert.Equal(t, chains.Pending, st.State, "custom networks keep today's rule: %s", st.Detail)
	assert.Positive(t, decodeTx(t, j.Records(3)[0].Raw).GasTipCap().Sign(), "and today's tip")
	st = waitState(t, a, j, 3, chains.Dropped, 5*time.Second)
	assert.Contains(t, st.Detail, "resubmit timeout")
}
