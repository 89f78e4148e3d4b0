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

// deadBatch takes n new evidence on chain into a batch and dead-letters it.
func deadBatch(t *testing.T, st *store.Store, chain string, n int, tag string) (store.Batch, []string) {
	t.Helper()
	nes := make([]store.NewEvidence, n)
	for i := range nes {
		nes[i] = store.NewEvidence{Digest: digestOf(fmt.Sprint(tag, i)), Chains: []string{chain}, Priority: 5}
	}
	ins, err := st.InsertEvidenceBatch(context.Background(), nes)
	require.NoError(t, err)
	ids := make([]string, n)
	for i, in := range ins {
		require.NoError(t, in.Err)
		ids[i] = in.Evidence.ID
	}
	b := formOne(t, st, chain, 10_000)
	require.Equal(t, n, b.Size)
	require.NoError(t, st.DeadLetterBatch(context.Background(), b.ID, chain+": provider down"))
	return b, ids
}

func TestRedriveOfABatchPutsEveryEvidenceBackAndASecondRunNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		// More evidence than one page, so the re-drive takes several transactions.
		b, ids := deadBatch(t, st, "stub", 1200, "a")
		other, _ := deadBatch(t, st, "stub", 3, "b")

		dry, err := st.DeadLetters(ctx, store.RedriveFilter{BatchID: b.ID})
		require.NoError(t, err)
		assert.Equal(t, 1200, dry.Evidence)
		assert.Equal(t, 1200, dry.Anchors)
		assert.Equal(t, map[string]int{"stub": 1200}, dry.ByChain)
		require.Len(t, dry.Batches, 1)
		assert.Equal(t, b.ID, dry.Batches[0].ID)
		assert.Equal(t, "stub: provider down", dry.Batches[0].LastError)
		assert.Equal(t, ids[:store.RedriveIDsShown], dry.IDs)
		assert.Equal(t, store.StatusDeadLetter, get(t, st, ids[0]).Status, "a dry run changes nothing")

		res, err := st.Redrive(ctx, store.RedriveFilter{BatchID: b.ID})
		require.NoError(t, err)
		assert.Equal(t, 1200, res.Evidence)
		assert.Equal(t, map[string]int{"stub": 1200}, res.ByChain)
		require.Len(t, res.Batches, 1)
		assert.Equal(t, 1200, res.Batches[0].Evidence)
		for _, id := range []string{ids[0], ids[599], ids[1199]} {
			ev := get(t, st, id)
			assert.Equal(t, store.StatusPending, ev.Status)
			assert.Zero(t, ev.Attempts)
		}
		got, err := st.GetBatch(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, store.BatchDeadLetter, got.State, "the batch stays the record of what failed")

		again, err := st.Redrive(ctx, store.RedriveFilter{BatchID: b.ID})
		require.NoError(t, err)
		assert.Zero(t, again.Anchors, "re-running after success re-drives nothing")
		assert.Empty(t, again.Batches)

		rest, err := st.DeadLetters(ctx, store.RedriveFilter{})
		require.NoError(t, err)
		assert.Equal(t, 3, rest.Evidence, "the other batch still waits")
		assert.Equal(t, other.ID, rest.Batches[0].ID)

		// The re-driven evidence goes into a new batch, first.
		nb := formOne(t, st, "stub", 10_000)
		assert.Equal(t, 1200, nb.Size)
	})
}

func TestRedriveSelectsByChainAndTimeOfDeadLettering(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ev := insert(t, st, store.NewEvidence{Digest: digestOf("both"), Chains: []string{"eth", "stub"}, Priority: 5})
		be := formOne(t, st, "eth", 10)
		bs := formOne(t, st, "stub", 10)
		require.NoError(t, st.DeadLetterBatch(ctx, be.ID, "eth down"))
		cut := nextMillisecond(t)
		nextMillisecond(t)
		require.NoError(t, st.DeadLetterBatch(ctx, bs.ID, "stub down"))

		before, err := st.DeadLetters(ctx, store.RedriveFilter{Until: cut})
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"eth": 1}, before.ByChain)
		after, err := st.DeadLetters(ctx, store.RedriveFilter{Since: cut})
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"stub": 1}, after.ByChain)
		all, err := st.DeadLetters(ctx, store.RedriveFilter{})
		require.NoError(t, err)
		assert.Equal(t, 1, all.Evidence, "one evidence, dead-lettered on two chains")
		assert.Equal(t, 2, all.Anchors)

		res, err := st.Redrive(ctx, store.RedriveFilter{Chain: "stub"})
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"stub": 1}, res.ByChain)
		got := get(t, st, ev.ID)
		assert.Equal(t, store.StatusDeadLetter, got.Status, "still dead-lettered on eth")
		assert.Equal(t, store.StatusPending, anchorOn(t, got, "stub").Status)
		assert.Equal(t, store.StatusDeadLetter, anchorOn(t, got, "eth").Status)
	})
}

func TestConcurrentRedrivesPutEachAnchorBackOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		_, ids := deadBatch(t, st, "stub", 700, "c")
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total int
		)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := st.Redrive(ctx, store.RedriveFilter{})
				assert.NoError(t, err)
				mu.Lock()
				total += res.Anchors
				mu.Unlock()
			}()
		}
		wg.Wait()
		assert.Equal(t, len(ids), total, "the runs together re-drove each anchor once")
		assert.Equal(t, store.StatusPending, get(t, st, ids[len(ids)-1]).Status)
	})
}
