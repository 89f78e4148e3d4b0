package store_test

import (
	"context"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

const walletA = "0x00000000000000000000000000000000000000aa"

var bothNetworks = []store.NetworkStart{{Network: "etherlink", Start: 0}, {Network: "solana", Start: 5}}

func addWallet(t *testing.T, st *store.Store, wallet string, nets ...store.NetworkStart) ([]store.SyncStatus, bool) {
	t.Helper()
	rows, changed, err := st.AddWallet(context.Background(), wallet, nets)
	require.NoError(t, err)
	return rows, changed
}

func transfer(tx string, kind scan.Kind, asset string, dir scan.Direction, amount int64, block uint64) store.TransferRecord {
	return store.TransferRecord{Tx: tx, Kind: string(kind), Asset: asset, From: "a", To: "b", Amount: big.NewInt(amount), Direction: string(dir), Block: block, BlockTime: time.Unix(int64(block), 0)}
}

func TestAddingAWalletStoresOnePendingRowPerNetwork(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		rows, changed := addWallet(t, st, walletA, bothNetworks...)
		assert.True(t, changed)
		require.Len(t, rows, 2)
		for _, r := range rows {
			assert.Equal(t, store.SyncPending, r.Status)
			assert.Zero(t, r.RetryCount)
		}
		assert.Equal(t, uint64(5), rows[1].Start)
		assert.Equal(t, uint64(5), rows[1].Checkpoint, "a fresh scan starts at the start point")

		due, err := st.UnstartedWallets(context.Background(), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		assert.Equal(t, []store.NetworkGen{{Network: "etherlink", Gen: 1}, {Network: "solana", Gen: 1}}, due[0].Networks)
		require.NoError(t, st.MarkWalletStarted(context.Background(), due[0]))
		due, err = st.UnstartedWallets(context.Background(), 10)
		require.NoError(t, err)
		assert.Empty(t, due)
	})
}

func TestAddingAWalletAgainWhileItRunsChangesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		addWallet(t, st, walletA, bothNetworks...)
		_, err := st.BeginScan(context.Background(), walletA, "etherlink")
		require.NoError(t, err)
		rows, changed := addWallet(t, st, walletA, bothNetworks...)
		assert.False(t, changed)
		assert.Equal(t, store.SyncRunning, rows[0].Status)
		assert.Equal(t, store.SyncPending, rows[1].Status)
		assert.Equal(t, int64(1), rows[0].Gen)
	})
}

func TestConcurrentAddsOfOneWalletStartItsWorkOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		var wg sync.WaitGroup
		changes := make(chan bool, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, changed, err := st.AddWallet(context.Background(), walletA, bothNetworks)
				assert.NoError(t, err)
				changes <- changed
			}()
		}
		wg.Wait()
		close(changes)
		n := 0
		for c := range changes {
			if c {
				n++
			}
		}
		assert.Equal(t, 1, n)
	})
}

func TestFailuresCountRetriesThenAbandonAndReAddingResets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		delay := func(retry int) time.Duration { return time.Duration(retry) * time.Minute }
		for retry := 1; retry <= 2; retry++ {
			_, err := st.BeginScan(ctx, walletA, "etherlink")
			require.NoError(t, err)
			row, wait, err := st.FailScan(ctx, walletA, "etherlink", store.ScanFailure{Error: "rpc down", Now: now, MaxRetries: 2, Delay: delay})
			require.NoError(t, err)
			assert.Equal(t, store.SyncFailed, row.Status)
			assert.Equal(t, retry, row.RetryCount)
			assert.Equal(t, time.Duration(retry)*time.Minute, wait)
			assert.Equal(t, now.Add(wait), row.NextRetryAt)
			assert.Equal(t, "rpc down", row.LastError)
		}
		row, wait, err := st.FailScan(ctx, walletA, "etherlink", store.ScanFailure{Error: "rpc still down", Now: now, MaxRetries: 2, Delay: delay})
		require.NoError(t, err)
		assert.Equal(t, store.SyncAbandoned, row.Status)
		assert.Zero(t, wait)
		assert.True(t, row.NextRetryAt.IsZero())
		assert.Equal(t, 2, row.RetryCount)

		rows, changed := addWallet(t, st, walletA, bothNetworks[0])
		assert.True(t, changed)
		assert.Equal(t, store.SyncPending, rows[0].Status)
		assert.Zero(t, rows[0].RetryCount)
		assert.True(t, rows[0].NextRetryAt.IsZero())
		assert.Empty(t, rows[0].LastError)
		assert.Equal(t, int64(2), rows[0].Gen, "a re-add is a new generation to start")
	})
}

func TestAPermanentFailureIsNotRetried(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		addWallet(t, st, walletA, bothNetworks[0])
		row, wait, err := st.FailScan(context.Background(), walletA, "etherlink", store.ScanFailure{Error: "bad address", Permanent: true, Now: time.Now(), MaxRetries: 5,
			Delay: func(int) time.Duration { panic("no delay for a permanent failure") }})
		require.NoError(t, err)
		assert.Equal(t, store.SyncFailed, row.Status)
		assert.Zero(t, wait)
		assert.True(t, row.NextRetryAt.IsZero())
		assert.Zero(t, row.RetryCount)
	})
}

func TestChunksStoreTransfersOnceAndTheCheckpointOnlyMovesForward(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		chunk := store.Chunk{
			Transfers: []store.TransferRecord{
				transfer("0x01", scan.KindNative, store.NativeAsset, scan.In, 100, 3),
				transfer("0x01", scan.KindToken, "0xt", scan.In, 7, 3),
			},
			Checkpoint: 10, Scanned: 10, Total: 100,
		}
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", chunk))
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", chunk), "a repeated chunk is no error")
		later := store.Chunk{Transfers: []store.TransferRecord{transfer("0x02", scan.KindFee, store.NativeAsset, scan.Out, 1, 12)}, Checkpoint: 20, Scanned: 20, Total: 100}
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", later))
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", chunk), "a late write from a presumed-dead attempt")

		row, err := st.SyncStatus(ctx, walletA, "etherlink")
		require.NoError(t, err)
		assert.Equal(t, uint64(20), row.Checkpoint)
		assert.Equal(t, uint64(20), row.Scanned)
		assert.Equal(t, 3, row.Transfers)

		page, next, err := st.ListTransfers(ctx, store.TransferFilter{Wallet: walletA, Limit: 2})
		require.NoError(t, err)
		require.Len(t, page, 2)
		assert.Equal(t, "0x01", page[0].Tx)
		rest, last, err := st.ListTransfers(ctx, store.TransferFilter{Wallet: walletA, Limit: 2, Cursor: next})
		require.NoError(t, err)
		assert.Empty(t, last)
		require.Len(t, rest, 1)
		assert.Equal(t, string(scan.KindFee), rest[0].Kind)
		assets, err := st.WalletAssets(ctx, walletA, "etherlink")
		require.NoError(t, err)
		assert.Equal(t, []string{store.NativeAsset, "0xt"}, assets)
	})
}

func TestFinishingAWalletReclassifiesAndReconcilesItsBalances(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", store.Chunk{Checkpoint: 100, Transfers: []store.TransferRecord{
			transfer("0x01", scan.KindNative, store.NativeAsset, scan.In, 1000, 1), // received
			transfer("0x02", scan.KindNative, store.NativeAsset, scan.Out, 300, 2), // sent …
			transfer("0x02", scan.KindFee, store.NativeAsset, scan.Out, 21, 2),     // … with its fee
			transfer("0x03", scan.KindToken, "0xt", scan.In, 50, 3),                // swap: tokens in …
			transfer("0x03", scan.KindNative, store.NativeAsset, scan.Out, 100, 3), // … for coin out
			transfer("0x03", scan.KindFee, store.NativeAsset, scan.Out, 30, 3),     //
			transfer("0x04", scan.KindFee, store.NativeAsset, scan.Out, 9, 4),      // an approval
			transfer("0x05", scan.KindNative, store.NativeAsset, scan.Self, 5, 5),  // to itself
			transfer("0x05", scan.KindFee, store.NativeAsset, scan.Out, 10, 5),     //
		}}))
		hold := func(asset string, v int64) store.Holding {
			return store.Holding{Asset: asset, Amount: big.NewInt(v), Known: true}
		}
		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", store.Holdings{
			OpeningAt: 0, ClosingAt: 100,
			Opening: []store.Holding{hold(store.NativeAsset, 0), {Asset: "0xt", Known: false}},
			Closing: []store.Holding{hold(store.NativeAsset, 530), hold("0xt", 49)},
		}))
		bals, err := st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		require.Len(t, bals, 2)
		native, token := bals[0], bals[1]
		assert.Equal(t, store.NativeAsset, native.Asset)
		assert.Equal(t, "530", native.Computed.String())
		require.NotNil(t, native.Reconciled)
		assert.True(t, *native.Reconciled)
		assert.Equal(t, "50", token.Computed.String())
		require.NotNil(t, token.Reconciled)
		assert.False(t, *token.Reconciled)
		assert.Contains(t, token.Detail, "1 less than the stored transfers explain")
		assert.Contains(t, token.Detail, "was not known to the node")

		page, _, err := st.ListTransfers(ctx, store.TransferFilter{Wallet: walletA, Network: "etherlink", Limit: 100})
		require.NoError(t, err)
		classes := map[string]string{}
		for _, tr := range page {
			classes[tr.Tx] = tr.Class
		}
		assert.Equal(t, map[string]string{"0x01": scan.ClassReceived, "0x02": scan.ClassSent, "0x03": scan.ClassSwap, "0x04": scan.ClassFee, "0x05": scan.ClassSelf}, classes)

		row, err := st.SyncStatus(ctx, walletA, "etherlink")
		require.NoError(t, err)
		assert.Equal(t, store.SyncCompleted, row.Status)
	})
}

func TestBalancesOfAnUnfinishedNetworkAreNotReconciled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		require.NoError(t, st.SaveChunk(ctx, walletA, "etherlink", store.Chunk{Checkpoint: 5,
			Transfers: []store.TransferRecord{transfer("0x01", scan.KindNative, store.NativeAsset, scan.In, 1, 1)}}))
		_, _, err := st.FailScan(ctx, walletA, "etherlink", store.ScanFailure{Error: "x", Permanent: true, Now: time.Now()})
		require.NoError(t, err)
		bals, err := st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		require.Len(t, bals, 1)
		assert.Nil(t, bals[0].Reconciled)
		assert.Equal(t, "1", bals[0].Computed.String())
		assert.Contains(t, bals[0].Detail, "did not complete")
	})
}

func TestUnknownWalletsAreNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		_, err := st.WalletStatus(context.Background(), walletA)
		assert.ErrorIs(t, err, store.ErrNotFound)
		_, err = st.BeginScan(context.Background(), walletA, "etherlink")
		assert.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = st.ListTransfers(context.Background(), store.TransferFilter{Wallet: walletA, Limit: 1, Cursor: "nope"})
		assert.ErrorIs(t, err, store.ErrBadCursor)
	})
}

func TestAnOpeningBalanceReadEarlierIsKeptWhenTheNodeHasSincePrunedIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		complete := func(opening store.Holding) {
			require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", store.Holdings{
				Opening: []store.Holding{opening},
				Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(9), Known: true}},
			}))
		}
		complete(store.Holding{Asset: store.NativeAsset, Amount: big.NewInt(9), Known: true})
		addWallet(t, st, walletA, bothNetworks[0])                      // re-added: scans the new blocks
		complete(store.Holding{Asset: store.NativeAsset, Known: false}) // pruned
		bals, err := st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		require.Len(t, bals, 1)
		assert.True(t, bals[0].OpeningKnown)
		assert.Equal(t, "9", bals[0].Opening.String())
		require.NotNil(t, bals[0].Reconciled)
		assert.True(t, *bals[0].Reconciled)
	})
}

// balanceOf finds the balance of asset on network among bals.
func balanceOf(t *testing.T, bals []store.Balance, network, asset string) store.Balance {
	t.Helper()
	for _, b := range bals {
		if b.Network == network && b.Asset == asset {
			return b
		}
	}
	require.Failf(t, "no balance", "%s %s", network, asset)
	return store.Balance{}
}

func TestANetworkWaitingForItsRetryKeepsItsLastBalancesReadableAndStaleWhileTheOthersAreRecalculated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		native := func(v int64) []store.Holding {
			return []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(v), Known: true}}
		}
		complete := func(network string, tx string, amount, closing int64) {
			require.NoError(t, st.SaveChunk(ctx, walletA, network, store.Chunk{Checkpoint: 10,
				Transfers: []store.TransferRecord{transfer(tx, scan.KindNative, store.NativeAsset, scan.In, amount, 1)}}))
			require.NoError(t, st.CompleteScan(ctx, walletA, network, store.Holdings{Opening: native(0), Closing: native(closing)}))
		}
		addWallet(t, st, walletA, bothNetworks...)
		complete("etherlink", "0x01", 7, 7)
		complete("solana", "s1", 3, 3)
		first, err := st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		firstSolana := balanceOf(t, first, "solana", store.NativeAsset)
		assert.False(t, firstSolana.Stale)
		assert.False(t, firstSolana.ComputedAt.IsZero())

		// Added again: both networks go back to work, and their balances
		// stay readable, stale, until recalculated.
		addWallet(t, st, walletA, bothNetworks...)
		bals, err := st.Balances(ctx, walletA)
		require.NoError(t, err)
		for _, b := range bals {
			assert.True(t, b.Stale, b.Network)
			require.NotNil(t, b.Computed, b.Network)
		}
		_, err = st.FinishWallet(ctx, walletA, backfill.FinishRules)
		assert.ErrorIs(t, err, store.ErrWalletBusy, "nothing is finished while a network is PENDING")

		// EtherLink completes with a new transfer; Solana stores one, fails
		// and waits for its retry.
		complete("etherlink", "0x02", 5, 12)
		_, err = st.BeginScan(ctx, walletA, "solana")
		require.NoError(t, err)
		_, err = st.FinishWallet(ctx, walletA, backfill.FinishRules)
		assert.ErrorIs(t, err, store.ErrWalletBusy, "nothing is finished while a network is RUNNING")
		require.NoError(t, st.SaveChunk(ctx, walletA, "solana", store.Chunk{Checkpoint: 5,
			Transfers: []store.TransferRecord{transfer("s2", scan.KindNative, store.NativeAsset, scan.In, 4, 2)}}))
		_, wait, err := st.FailScan(ctx, walletA, "solana", store.ScanFailure{Error: "rpc down", Now: time.Now(), MaxRetries: 5,
			Delay: func(int) time.Duration { return time.Hour }})
		require.NoError(t, err)
		require.Positive(t, wait)

		bals, err = st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		evm := balanceOf(t, bals, "etherlink", store.NativeAsset)
		assert.False(t, evm.Stale, "a done network is recalculated while another waits")
		assert.Equal(t, "12", evm.Computed.String())
		require.NotNil(t, evm.Reconciled)
		assert.True(t, *evm.Reconciled)
		sol := balanceOf(t, bals, "solana", store.NativeAsset)
		assert.True(t, sol.Stale, "the waiting network's balance awaits its retry")
		assert.Equal(t, "3", sol.Computed.String(), "its last computed balance stays readable")
		assert.True(t, firstSolana.ComputedAt.Equal(sol.ComputedAt), "and says when it was computed")
		require.NotNil(t, sol.Reconciled)
		classes := map[string]string{}
		page, _, err := st.ListTransfers(ctx, store.TransferFilter{Wallet: walletA, Limit: 100})
		require.NoError(t, err)
		for _, tr := range page {
			classes[tr.Tx] = tr.Class
		}
		assert.Equal(t, scan.ClassReceived, classes["0x02"])
		assert.Empty(t, classes["s2"], "the waiting network's transfers are not reclassified yet")

		// The retry completes: Solana is recalculated in its turn.
		_, err = st.BeginScan(ctx, walletA, "solana")
		require.NoError(t, err)
		require.NoError(t, st.CompleteScan(ctx, walletA, "solana", store.Holdings{Opening: native(0), Closing: native(7)}))
		bals, err = st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		sol = balanceOf(t, bals, "solana", store.NativeAsset)
		assert.False(t, sol.Stale)
		assert.Equal(t, "7", sol.Computed.String())
		assert.False(t, sol.ComputedAt.Before(evm.ComputedAt))
	})
}

func TestAScanThatCompletesKeepsTheNetworksLastBalancesReadableUntilRecalculated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		closing := func(v int64) store.Holdings {
			return store.Holdings{Opening: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(0), Known: true}},
				Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(v), Known: true}, {Asset: "0xt", Amount: big.NewInt(1), Known: true}}}
		}
		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", closing(0)))
		_, err := st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)

		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", closing(9)))
		bals, err := st.Balances(ctx, walletA)
		require.NoError(t, err)
		b := balanceOf(t, bals, "etherlink", store.NativeAsset)
		assert.True(t, b.Stale)
		require.NotNil(t, b.Computed, "not cleared")
		assert.Equal(t, "0", b.Computed.String())
		assert.Equal(t, "9", b.Chain.String())
	})
}

func TestTheMigrationTakesBalancesComputedBeforeAsComputedAtTheirLastUpdateAndUncomputedOnesAsStale(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		old, err := store.OpenAtVersion(ctx, where, 10)
		require.NoError(t, err)
		for _, row := range []struct {
			asset, computed string
			updated         int64
		}{{store.NativeAsset, "5", 1700000000000}, {"0xt", "", 1700000001000}} {
			require.NoError(t, store.Exec(ctx, old, `INSERT INTO wallet_balances (wallet, network, asset, computed, updated_at) VALUES (?, ?, ?, ?, ?)`,
				walletA, "etherlink", row.asset, row.computed, row.updated))
		}
		require.NoError(t, old.Close())

		st := storetest.Open(t, where)
		defer st.Close()
		bals, err := st.Balances(ctx, walletA)
		require.NoError(t, err)
		require.Len(t, bals, 2)
		assert.False(t, bals[0].Stale)
		assert.Equal(t, time.UnixMilli(1700000000000).UTC(), bals[0].ComputedAt)
		assert.True(t, bals[1].Stale, "cleared by a scan that completed: awaiting recalculation")
		assert.True(t, bals[1].ComputedAt.IsZero())
	})
}

func TestDueItemsAreTheHandedOnesThatShouldBeAtWorkAndARequeueHandsThemOverOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		const walletB = "0x00000000000000000000000000000000000000bb"
		addWallet(t, st, walletA, bothNetworks...)
		addWallet(t, st, walletB, bothNetworks...)
		later := func() time.Time { return time.Now().Add(time.Minute) }
		due, err := st.DueItems(ctx, time.Now(), later(), store.ItemKey{}, 10)
		require.NoError(t, err)
		assert.Empty(t, due, "work not yet handed to Temporal is the dispatcher's")
		starts, err := st.UnstartedWallets(ctx, 10)
		require.NoError(t, err)
		for _, ws := range starts {
			require.NoError(t, st.MarkWalletStarted(ctx, ws))
		}

		past := time.Now().Add(-time.Hour)
		minute := func(int) time.Duration { return time.Minute }
		_, err = st.BeginScan(ctx, walletA, "etherlink") // RUNNING
		require.NoError(t, err)
		_, _, err = st.FailScan(ctx, walletA, "solana", store.ScanFailure{Error: "rpc down", Now: past, MaxRetries: 5, Delay: minute}) // its retry is overdue
		require.NoError(t, err)
		_, _, err = st.FailScan(ctx, walletB, "etherlink", store.ScanFailure{Error: "rpc down", Now: time.Now(), MaxRetries: 5, Delay: func(int) time.Duration { return time.Hour }})
		require.NoError(t, err)
		_, _, err = st.FailScan(ctx, walletB, "solana", store.ScanFailure{Error: "bad address", Permanent: true, Now: time.Now(), MaxRetries: 5, Delay: minute})
		require.NoError(t, err)

		due, err = st.DueItems(ctx, time.Now(), time.Now().Add(-time.Hour), store.ItemKey{}, 10)
		require.NoError(t, err)
		assert.Empty(t, due, "rows changed since quiet are left alone")
		var keys []store.ItemKey
		after := store.ItemKey{}
		for {
			page, err := st.DueItems(ctx, time.Now(), later(), after, 1)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			after = store.ItemKey{Wallet: page[0].Wallet, Network: page[0].Network}
			keys = append(keys, after)
		}
		assert.Equal(t, []store.ItemKey{{walletA, "etherlink"}, {walletA, "solana"}}, keys,
			"the running item and the one past its retry time; not one waiting for a later retry, nor one failed for good")

		due, err = st.DueItems(ctx, time.Now(), later(), store.ItemKey{}, 10)
		require.NoError(t, err)
		require.Len(t, due, 2)
		for _, d := range due {
			ok, err := st.Requeue(ctx, d)
			require.NoError(t, err)
			assert.True(t, ok)
			again, err := st.Requeue(ctx, d)
			require.NoError(t, err)
			assert.False(t, again, "a row that changed since it was read is not requeued twice")
		}
		row, err := st.SyncStatus(ctx, walletA, "solana")
		require.NoError(t, err)
		assert.Equal(t, store.SyncPending, row.Status)
		assert.Equal(t, 1, row.RetryCount, "a requeue keeps the retry count: the item goes on with its schedule")
		assert.True(t, row.NextRetryAt.IsZero())
		assert.Equal(t, "rpc down", row.LastError)
		starts, err = st.UnstartedWallets(ctx, 10)
		require.NoError(t, err)
		assert.Equal(t, []store.WalletStart{{Wallet: walletA, Networks: []store.NetworkGen{{Network: "etherlink", Gen: 2}, {Network: "solana", Gen: 2}}}}, starts,
			"requeued items are handed to Temporal again with a new generation")
	})
}

func TestACompletedItemWhoseWalletWasNeverFinishedIsDueUntilItIs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		addWallet(t, st, walletA, bothNetworks[0])
		starts, err := st.UnstartedWallets(ctx, 10)
		require.NoError(t, err)
		require.NoError(t, st.MarkWalletStarted(ctx, starts[0]))
		_, err = st.BeginScan(ctx, walletA, "etherlink")
		require.NoError(t, err)
		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", store.Holdings{Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(0), Known: true}}}))
		later := time.Now().Add(time.Minute)

		due, err := st.DueItems(ctx, time.Now(), later, store.ItemKey{}, 10)
		require.NoError(t, err)
		require.Len(t, due, 1, "its balances await the wallet's finish")
		assert.Equal(t, store.SyncCompleted, due[0].Status)

		_, err = st.FinishWallet(ctx, walletA, backfill.FinishRules)
		require.NoError(t, err)
		due, err = st.DueItems(ctx, time.Now(), later, store.ItemKey{}, 10)
		require.NoError(t, err)
		assert.Empty(t, due, "a finished wallet is not")
	})
}
