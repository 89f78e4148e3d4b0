package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestMetricCountsFollowBatchesEpochsAndBackfill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		for _, s := range []string{"a", "b", "c"} {
			_, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(s), Chains: []string{"stub"}, Priority: 5})
			require.NoError(t, err)
		}
		b, ok, err := st.FormBatch(ctx, "stub", 2)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, st.MarkBatchStarted(ctx, b.ID))
		_, ok, err = st.FormBatch(ctx, "stub", 2)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, st.MarkSubmitted(ctx, b.ID, [32]byte{1}, "stub:1"))

		batches, err := st.UnfinishedBatches(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []store.BatchCount{
			{Chain: "stub", State: store.BatchSubmitted, Batches: 1, Evidence: 2},
			{Chain: "stub", State: store.BatchFormed, Batches: 1, Evidence: 1},
		}, batches)

		_, _, err = st.CreateEpoch(ctx, newEpoch("e1"), 10)
		require.NoError(t, err)
		epochs, err := st.EpochCounts(ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{store.EpochQueued: 1}, epochs)

		_, _, err = st.AddWallet(ctx, "0xabc", []store.NetworkStart{{Network: "etherlink"}, {Network: "solana"}})
		require.NoError(t, err)
		backfill, err := st.BackfillCounts(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []store.BackfillCount{
			{Network: "etherlink", Status: store.SyncPending, Items: 1},
			{Network: "solana", Status: store.SyncPending, Items: 1},
		}, backfill)
	})
}

func TestUnsettledSaysWhetherEvidenceOfARangeStillAwaitsAnAnchor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		unsettled := func(after, upto int64) bool {
			t.Helper()
			u, err := st.Unsettled(ctx, after, upto)
			require.NoError(t, err)
			return u
		}
		insert(t, st, store.NewEvidence{Digest: digestOf("u1"), Chains: []string{"eth"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("u2"), Chains: []string{"eth", "stub"}, Priority: 5})
		assert.True(t, unsettled(0, 2), "pending")
		b := formOne(t, st, "eth", 10)
		assert.True(t, unsettled(0, 1), "batched")
		confirm(t, st, b, "0x1", 1)
		assert.False(t, unsettled(0, 1), "confirmed")
		assert.True(t, unsettled(1, 2), "the second still waits on stub")
		confirm(t, st, formOne(t, st, "stub", 10), "stub:1", 1)
		assert.False(t, unsettled(0, 2))
		assert.False(t, unsettled(2, 10), "an empty range")
	})
}
