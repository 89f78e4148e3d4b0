package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// A finality wait is replaced by a retried attempt's, deleted only by the
// registration that was completed, and adopted by another watcher only once
// its owner's lease has run out.
func TestFinalityWaitsAreReplacedDeletedByTicketAndAdoptedAfterTheirLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		insert(t, st, store.NewEvidence{Digest: digestOf("w1"), Chains: []string{"stub"}, Priority: 5})
		b := formOne(t, st, "stub", 10)
		require.NoError(t, st.MarkSubmitted(ctx, b.ID, [32]byte{1}, "tx-1"))
		now := time.Now().UTC().Truncate(time.Millisecond)

		ids, err := st.UnwatchedSubmitted(ctx, "stub", now.Add(time.Minute), 10)
		require.NoError(t, err)
		assert.Equal(t, []int64{b.ID}, ids, "a submitted batch without a wait is a candidate orphan")

		first := store.Wait{BatchID: b.ID, Chain: "stub", Ticket: "run/5/1", TaskToken: []byte("token-1"), WorkflowID: "anchor-stub-1",
			RunID: "run", ActivityID: "5", Attempt: 1, Owner: "a", LeaseUntil: now.Add(30 * time.Second), CreatedAt: now}
		require.NoError(t, st.RegisterWait(ctx, first))
		ids, err = st.UnwatchedSubmitted(ctx, "stub", now.Add(time.Minute), 10)
		require.NoError(t, err)
		assert.Empty(t, ids, "a batch with a wait is watched")

		retried := first
		retried.Ticket, retried.TaskToken, retried.Attempt = "run/5/2", []byte("token-2"), 2
		require.NoError(t, st.RegisterWait(ctx, retried))
		got, err := st.GetWait(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, retried, got, "the retried attempt's registration replaced the first")

		deleted, err := st.DeleteWait(ctx, b.ID, first.Ticket)
		require.NoError(t, err)
		assert.False(t, deleted, "completing the first attempt does not remove the retry's wait")

		held, err := st.AdoptWaits(ctx, "b", "stub", now, now.Add(30*time.Second))
		require.NoError(t, err)
		assert.Empty(t, held, "a live lease is not adopted")
		held, err = st.AdoptWaits(ctx, "b", "stub", now.Add(31*time.Second), now.Add(61*time.Second))
		require.NoError(t, err)
		require.Len(t, held, 1, "a lapsed lease is adopted")
		assert.Equal(t, "b", held[0].Owner)
		assert.Equal(t, []byte("token-2"), held[0].TaskToken)

		require.NoError(t, st.RenewWaits(ctx, "b", now.Add(90*time.Second)))
		got, err = st.GetWait(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, now.Add(90*time.Second).UTC(), got.LeaseUntil)

		deleted, err = st.DeleteWait(ctx, b.ID, retried.Ticket)
		require.NoError(t, err)
		assert.True(t, deleted)
		_, err = st.GetWait(ctx, b.ID)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}
