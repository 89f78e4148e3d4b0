package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func insertBatch(t *testing.T, st *store.Store, nes ...store.NewEvidence) []store.Inserted {
	t.Helper()
	res, err := st.InsertEvidenceBatch(context.Background(), nes)
	require.NoError(t, err)
	require.Len(t, res, len(nes))
	return res
}

func TestInsertEvidenceBatchStoresEachEvidenceWithOnePendingAnchorPerChainAndAnswersInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		res := insertBatch(t, st,
			store.NewEvidence{Digest: digestOf("a"), Chains: []string{"eth", "stub"}, Priority: 3},
			store.NewEvidence{Digest: digestOf("b"), Chains: []string{"stub"}, Priority: 7},
			store.NewEvidence{Digest: digestOf("c"), Chains: []string{"eth"}, Priority: 5},
		)

		for i, want := range []string{"a", "b", "c"} {
			require.NoError(t, res[i].Err)
			assert.True(t, res[i].Created)
			assert.Regexp(t, `^ev_[0-9a-f]{24}$`, res[i].Evidence.ID)
			got := get(t, st, res[i].Evidence.ID)
			assert.Equal(t, digestOf(want), got.Digest, "answer %d is the evidence asked for %d-th", i, i)
			assert.Equal(t, store.StatusPending, got.Status)
			assert.Len(t, got.Anchors, len(got.Chains))
			assert.Len(t, got.Salt, store.SaltSize)
		}
		assert.NotEqual(t, get(t, st, res[0].Evidence.ID).Salt, get(t, st, res[1].Evidence.ID).Salt, "each evidence has a salt of its own")
		pending, err := st.PendingChains(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 2, pending["eth"].Count)
		assert.Equal(t, 2, pending["stub"].Count)
	})
}

func TestInsertEvidenceBatchAnswersAKeySeenBeforeOrEarlierInTheSameBatchWithThatEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		before := insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-1"})

		res := insertBatch(t, st,
			store.NewEvidence{Digest: digestOf("other"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-1"},
			store.NewEvidence{Digest: digestOf("b"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-2"},
			store.NewEvidence{Digest: digestOf("b"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-2"},
			store.NewEvidence{Digest: digestOf("b"), Chains: []string{"stub"}, Priority: 5},
		)

		assert.False(t, res[0].Created)
		assert.Equal(t, before.ID, res[0].Evidence.ID)
		assert.Equal(t, digestOf("a"), res[0].Evidence.Digest, "the stored evidence is answered, not the new request")
		assert.True(t, res[1].Created)
		assert.False(t, res[2].Created, "the second use of a key in one batch answers the first's evidence")
		assert.Equal(t, res[1].Evidence.ID, res[2].Evidence.ID)
		require.Len(t, res[2].Evidence.Anchors, 1)
		assert.True(t, res[3].Created, "without a key the same digest is stored again")
		assert.Len(t, listAll(t, st, ""), 3)
	})
}

func TestInsertEvidenceBatchStoresTheOthersWholeWhenOneEvidenceFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		res := insertBatch(t, st,
			store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5},
			// It lists a chain twice, which the store refuses: the transaction
			// of the whole batch fails, and this evidence alone after it.
			store.NewEvidence{Digest: digestOf("bad"), Chains: []string{"eth", "stub", "stub"}, Priority: 5},
			store.NewEvidence{Digest: digestOf("c"), Chains: []string{"stub"}, Priority: 5},
		)

		require.NoError(t, res[0].Err)
		require.Error(t, res[1].Err)
		require.NoError(t, res[2].Err)
		all := listAll(t, st, "")
		require.Len(t, all, 2)
		assert.ElementsMatch(t, []string{res[0].Evidence.ID, res[2].Evidence.ID}, []string{all[0].ID, all[1].ID})
		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, pending["stub"].Count)
		assert.Zero(t, pending["eth"].Count, "no outbox row of the failed evidence is left behind")
	})
}

func TestInsertEvidenceBatchWhoseCallerGaveUpStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := st.InsertEvidenceBatch(ctx, []store.NewEvidence{{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5}})
		require.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, listAll(t, st, ""))
	})
}

// Batches and single inserts arriving together share the committer's
// transactions; each evidence is stored once and answered with its own id.
func TestConcurrentBatchesAndSingleInsertsAreEachStoredOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		const batches, perBatch, singles = 8, 300, 50
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			ids   = map[string]string{} // id → digest name
			start = make(chan struct{})
		)
		answered := func(id, name string) {
			mu.Lock()
			defer mu.Unlock()
			assert.NotContains(t, ids, id)
			ids[id] = name
		}
		for b := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nes := make([]store.NewEvidence, perBatch)
				for i := range nes {
					nes[i] = store.NewEvidence{Digest: digestOf(fmt.Sprint(b, "/", i)), Chains: []string{"stub"}, Priority: 5}
				}
				<-start
				res, err := st.InsertEvidenceBatch(ctx, nes)
				if !assert.NoError(t, err) {
					return
				}
				for i, r := range res {
					assert.NoError(t, r.Err)
					answered(r.Evidence.ID, fmt.Sprint(b, "/", i))
				}
			}()
		}
		for i := range singles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ev, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("single/", i)), Chains: []string{"stub"}, Priority: 5})
				if assert.NoError(t, err) {
					answered(ev.ID, fmt.Sprint("single/", i))
				}
			}()
		}
		close(start)
		wg.Wait()

		all := listAll(t, st, "")
		require.Len(t, all, batches*perBatch+singles)
		for _, ev := range all {
			name, ok := ids[ev.ID]
			require.True(t, ok, "%s was stored but answered to no one", ev.ID)
			assert.Equal(t, digestOf(name), ev.Digest)
		}
	})
}

// BenchmarkBulkIntakeStore measures InsertEvidenceBatch alone on SQLite:
// batches of 1,000 evidence on two chains, from two callers at once.
func BenchmarkBulkIntakeStore(b *testing.B) {
	st := storetest.SQLite(b)
	nes := make([]store.NewEvidence, 1000)
	for i := range nes {
		nes[i] = store.NewEvidence{Digest: digestOf(fmt.Sprint(i)), Chains: []string{"etherlink", "solana"}, Priority: 5}
	}
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.InsertEvidenceBatch(context.Background(), nes); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N*len(nes))/b.Elapsed().Seconds(), "evidence/s")
}
