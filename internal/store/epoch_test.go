package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func newEpoch(id string) store.NewEpoch {
	return store.NewEpoch{ID: id, RequestHash: "hash-" + id, Pool: "100", Usage: []byte("sealed"), Deadline: time.Now().Add(time.Hour)}
}

func TestCreateEpochStoresItQueuedAndReturnsTheStoredOneForARepeat(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		e, created, err := st.CreateEpoch(ctx, newEpoch("e1"), 10)
		require.NoError(t, err)
		assert.True(t, created)
		assert.Equal(t, store.EpochQueued, e.Status)
		assert.Equal(t, 1, e.Run)
		assert.True(t, e.Inline)

		other := newEpoch("e1")
		other.RequestHash = "something else"
		again, created, err := st.CreateEpoch(ctx, other, 10)
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, "hash-e1", again.RequestHash, "the stored epoch, for the caller to compare")
	})
}

func TestConcurrentCreatesOfOneEpochStoreItOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		createdN := 0
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, created, err := st.CreateEpoch(context.Background(), newEpoch("same"), 10)
				assert.NoError(t, err)
				if created {
					mu.Lock()
					createdN++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, 1, createdN)
	})
}

func TestTheInFlightLimitCountsQueuedAndComputingEpochsWithinTheirDeadline(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		for i := 0; i < 2; i++ {
			_, _, err := st.CreateEpoch(ctx, newEpoch(fmt.Sprint("e", i)), 2)
			require.NoError(t, err)
		}
		require.NoError(t, st.StartEpoch(ctx, "e0", 1))
		_, _, err := st.CreateEpoch(ctx, newEpoch("e2"), 2)
		require.ErrorIs(t, err, store.ErrBusy)

		require.NoError(t, st.FinishEpoch(ctx, "e1", 1, store.EpochQuarantined, "duplicate account a"))
		_, created, err := st.CreateEpoch(ctx, newEpoch("e2"), 2)
		require.NoError(t, err)
		assert.True(t, created, "a quarantined epoch is no longer in flight")

		stats, err := st.EpochStats(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.EpochStats{InFlight: 2, Quarantined: 1}, stats)
	})
}

func TestAnEpochPastItsDeadlineReadsAsFailedAndCanBeRestarted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ne := newEpoch("late")
		ne.Deadline = time.Now().Add(-time.Millisecond)
		_, _, err := st.CreateEpoch(ctx, ne, 10)
		require.NoError(t, err)
		e, err := st.GetEpoch(ctx, "late")
		require.NoError(t, err)
		assert.Equal(t, store.EpochFailed, e.Status)
		assert.Equal(t, store.ReasonDeadline, e.Reason)

		_, err = st.RestartEpoch(ctx, "late", "other hash", time.Now().Add(time.Hour), 10)
		assert.ErrorIs(t, err, store.ErrConflict, "only the same request restarts an epoch")
		e, err = st.RestartEpoch(ctx, "late", ne.RequestHash, time.Now().Add(time.Hour), 10)
		require.NoError(t, err)
		assert.Equal(t, 2, e.Run)
		assert.Equal(t, store.EpochQueued, e.Status)
		assert.Empty(t, e.Reason)
	})
}

func TestAQuarantinedEpochCanBeRestartedButACompletedOneCannot(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		for _, id := range []string{"q", "done"} {
			_, _, err := st.CreateEpoch(ctx, newEpoch(id), 10)
			require.NoError(t, err)
		}
		require.NoError(t, st.FinishEpoch(ctx, "q", 1, store.EpochQuarantined, "intents not delivered: ledger down"))
		require.NoError(t, st.FinishEpoch(ctx, "done", 1, store.EpochCompleted, ""))

		_, err := st.RestartEpoch(ctx, "done", "hash-done", time.Now().Add(time.Hour), 10)
		assert.ErrorIs(t, err, store.ErrConflict, "a completed epoch never runs again")
		e, err := st.RestartEpoch(ctx, "q", "hash-q", time.Now().Add(time.Hour), 10)
		require.NoError(t, err)
		assert.Equal(t, 2, e.Run)
		assert.Equal(t, store.EpochQueued, e.Status)
		assert.Empty(t, e.Reason)
	})
}

func TestQuarantinedEpochsAreListedMostRecentFirstUpToTheLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		for _, id := range []string{"a", "b", "c", "ok"} {
			_, _, err := st.CreateEpoch(ctx, newEpoch(id), 10)
			require.NoError(t, err)
		}
		for _, id := range []string{"a", "b", "c"} {
			require.NoError(t, st.FinishEpoch(ctx, id, 1, store.EpochQuarantined, "check failed"))
			nextMillisecond(t)
		}
		require.NoError(t, st.FinishEpoch(ctx, "ok", 1, store.EpochCompleted, ""))
		ids, err := st.QuarantinedEpochs(ctx, 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"c", "b"}, ids)
	})
}

func TestWritesFromAnEarlierRunAreRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		_, _, err := st.CreateEpoch(ctx, newEpoch("e"), 10)
		require.NoError(t, err)
		require.NoError(t, st.StartEpoch(ctx, "e", 1))
		require.NoError(t, st.FinishEpoch(ctx, "e", 1, store.EpochFailed, "source down"))
		_, err = st.RestartEpoch(ctx, "e", "hash-e", time.Now().Add(time.Hour), 10)
		require.NoError(t, err)

		assert.ErrorIs(t, st.RecordSealed(ctx, "e", 1, "h", "p", 1), store.ErrConflict)
		assert.ErrorIs(t, st.FinishEpoch(ctx, "e", 1, store.EpochCompleted, ""), store.ErrConflict)
		_, err = st.EpochRequest(ctx, "e", 1)
		assert.ErrorIs(t, err, store.ErrConflict)
		require.NoError(t, st.StartEpoch(ctx, "e", 2))
		require.NoError(t, st.RecordSealed(ctx, "e", 2, "h", "p", 1))
	})
}

func TestAFinishedEpochTakesNoMoreWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		_, _, err := st.CreateEpoch(ctx, newEpoch("e"), 10)
		require.NoError(t, err)
		require.NoError(t, st.FinishEpoch(ctx, "e", 1, store.EpochCompleted, ""))
		assert.ErrorIs(t, st.RecordIntents(ctx, "e", 1, 5, 5, true), store.ErrConflict)
		assert.Error(t, st.FinishEpoch(ctx, "e", 1, "queued", ""), "queued is not a final status")
	})
}

func TestTheLedgerKeepsOneIntentPerKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		in := store.LedgerIntent{IdempotencyKey: "epoch-e-a", Epoch: "e", Account: "a", Amount: "5"}
		var wg sync.WaitGroup
		ids := make([]string, 10)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				li, _, err := st.RecordIntent(ctx, in)
				assert.NoError(t, err)
				ids[i] = li.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			assert.Equal(t, ids[0], id, "every request got the one stored intent")
		}
		in.Amount = "6"
		_, _, err := st.RecordIntent(ctx, in)
		assert.ErrorIs(t, err, store.ErrConflict)
		held, err := st.LedgerIntents(ctx, "e", "", 10)
		require.NoError(t, err)
		require.Len(t, held, 1)
		assert.Equal(t, "5", held[0].Amount)
		assert.Equal(t, 9, held[0].Replays)
	})
}
