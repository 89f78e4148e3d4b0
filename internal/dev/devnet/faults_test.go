package devnet

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

func TestTheClockFinalizesATransactionOnItsOwn(t *testing.T) {
	ctx := context.Background()
	d, c := start(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("tick tock")))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := status(t, c, sig)
		return st != nil && st.ConfirmationStatus == rpc.ConfirmationStatusFinalized
	}, 5*time.Second, testSlotTime)
	got, err := c.GetTransaction(ctx, sig, nil)
	require.NoError(t, err)
	assert.Nil(t, got.Meta.Err)
}

func TestPauseStopsSlotProductionUntilResume(t *testing.T) {
	d, _ := start(t, Options{})
	d.Pause()
	paused, ticks := d.Slot(), d.ticks.Load()
	require.Eventually(t, func() bool { return d.ticks.Load() >= ticks+5 }, 5*time.Second, testSlotTime, "the slot clock ticks on while paused")
	assert.Equal(t, paused, d.Slot())
	d.Resume()
	require.Eventually(t, func() bool { return d.Slot() > paused+2 }, 2*time.Second, testSlotTime)
}

func TestDropNextAcceptsATransactionThatNeverLands(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	d.DropNext(1)
	dropped, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("dropped")))
	require.NoError(t, err)
	kept, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("kept")))
	require.NoError(t, err)
	d.Advance(2)
	assert.Nil(t, status(t, c, dropped))
	assert.NotNil(t, status(t, c, kept))
}

func TestClearDropsIncludesSendsAgain(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	d.DropNext(100)
	dropped, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("dropped")))
	require.NoError(t, err)
	d.ClearDrops()
	kept, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("kept")))
	require.NoError(t, err)
	d.Advance(2)
	assert.Nil(t, status(t, c, dropped))
	assert.NotNil(t, status(t, c, kept))
}

func TestDelayInclusionHoldsTransactionsBack(t *testing.T) {
	ctx := context.Background()
	clock := &testkit.Clock{}
	d, c := startPaused(t, Options{now: clock.Now})
	d.DelayInclusion(150 * time.Millisecond)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("later")))
	require.NoError(t, err)
	d.Advance(3)
	assert.Nil(t, status(t, c, sig))
	clock.Advance(160 * time.Millisecond)
	d.Advance(1)
	assert.NotNil(t, status(t, c, sig))
}

func TestSkippedSlotsAdvanceTheSlotButNotTheBlockHeight(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	d.Advance(2)
	bh, _ := blockhash(t, c, rpc.CommitmentProcessed)
	sig, err := c.SendTransactionWithOpts(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("after the gap")), processedPreflight())
	require.NoError(t, err)
	d.SkipSlots(3)
	d.Advance(3)
	assert.EqualValues(t, 2, d.Slot(), "no block was produced")
	assert.Nil(t, status(t, c, sig))
	d.Advance(2)
	assert.EqualValues(t, 7, d.Slot())
	assert.EqualValues(t, 4, d.BlockHeight())
	st := status(t, c, sig)
	require.NotNil(t, st)
	assert.EqualValues(t, 6, st.Slot)

	_, err = c.GetBlockWithOpts(ctx, 4, &rpc.GetBlockOpts{Commitment: rpc.CommitmentConfirmed})
	e := rpcErr(t, err)
	assert.Equal(t, -32007, e.Code)
	assert.Equal(t, "Slot 4 was skipped, or missing due to ledger jump to recent snapshot", e.Message)
}

func TestLostDeliveriesAreRetriedUnlessMaxRetriesIsZero(t *testing.T) {
	ctx := context.Background()
	clock := &testkit.Clock{}
	d, c := startPaused(t, Options{RetryInterval: 30 * time.Millisecond, now: clock.Now})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)

	d.LoseDeliveries(1)
	once, err := c.SendTransactionWithOpts(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("no retries")),
		rpc.TransactionOpts{MaxRetries: ptr(uint(0))})
	require.NoError(t, err)
	d.LoseDeliveries(1)
	retried, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("retried")))
	require.NoError(t, err)

	d.Advance(1)
	assert.Nil(t, status(t, c, once))
	assert.Nil(t, status(t, c, retried))
	clock.Advance(40 * time.Millisecond)
	d.Advance(1)
	assert.Nil(t, status(t, c, once), "maxRetries 0: the lost delivery is final")
	assert.NotNil(t, status(t, c, retried), "rebroadcast after the retry interval")
}

func TestFailRPCAnswersJSONRPCErrorsAndCountsTheCalls(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	d.FailRPC("getSignatureStatuses", 2)
	sig := solana.Signature{1}
	for range 2 {
		_, err := c.GetSignatureStatuses(ctx, false, sig)
		e := rpcErr(t, err)
		assert.Equal(t, -32603, e.Code)
		assert.Equal(t, "Internal error", e.Message)
	}
	_, err := c.GetSignatureStatuses(ctx, false, sig)
	require.NoError(t, err)
	_, err = c.GetSlot(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, 3, d.Calls("getSignatureStatuses"))
	assert.Equal(t, map[string]int{"getSignatureStatuses": 3, "getSlot": 1}, d.CallCounts())
	d.ResetCalls()
	assert.Zero(t, d.Calls("getSignatureStatuses"))
}

func TestFailHTTPAnswersWithAnHTTPStatus(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	d.FailHTTP("getLatestBlockhash", 1, http.StatusServiceUnavailable)
	_, err := c.GetLatestBlockhash(ctx, "")
	var httpErr *jsonrpc.HTTPError
	require.True(t, errors.As(err, &httpErr), "got %v", err)
	assert.Equal(t, http.StatusServiceUnavailable, httpErr.Code)
	_, err = c.GetLatestBlockhash(ctx, "")
	require.NoError(t, err)
}

func TestRateFaultsFailAFractionOfCallsUntilCleared(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{Seed: 42})
	d.FailRPCRate("getHealth", 0.5)
	failed := 0
	for range 40 {
		if _, err := c.GetHealth(ctx); err != nil {
			failed++
		}
	}
	assert.Greater(t, failed, 5)
	assert.Less(t, failed, 35)
	d.ClearFaults()
	_, err := c.GetHealth(ctx)
	require.NoError(t, err)

	d.InjectFault(RPCFault{Method: "getHealth", Code: -32005, Message: "Node is unhealthy"})
	_, err = c.GetHealth(ctx)
	assert.Equal(t, -32005, rpcErr(t, err).Code)
}

func TestAFaultWithOnlyADelaySlowsCallsDownWithoutFailingThem(t *testing.T) {
	ctx := context.Background()
	d, c := start(t, Options{})
	d.InjectFault(RPCFault{Method: "getHealth", Delay: 50 * time.Millisecond, Count: 1})
	h, err := c.GetHealth(ctx)
	require.NoError(t, err)
	assert.Equal(t, rpc.HealthOk, h)
	assert.Equal(t, 1, d.Calls("getHealth"))
}

func TestCancellingTheStartContextStopsTheDevnet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d, err := Start(ctx, Options{SlotTime: testSlotTime})
	require.NoError(t, err)
	c := rpc.New(d.URL())
	_, err = c.GetHealth(context.Background())
	require.NoError(t, err)
	cancel()
	require.Eventually(t, func() bool {
		_, err := c.GetHealth(context.Background())
		return err != nil
	}, 2*time.Second, 10*time.Millisecond)
	d.Stop() // idempotent
}
