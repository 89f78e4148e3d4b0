package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// Evidence of one chain interleaved with another chain's is taken whole by
// that chain's batches, in intake order, each once, and the other chain's
// evidence stays pending on its own lane.
func TestEvidenceInterleavedWithAnotherChainsIsBatchedOnceInIntakeOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var onEth, onStubOnly []store.Evidence
		for i := range 9 {
			chains := [][]string{{"eth"}, {"stub"}, {"eth", "stub"}}[i%3]
			ev := insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("mixed", i)), Chains: chains, Priority: 5})
			if chains[0] == "eth" {
				onEth = append(onEth, ev)
			} else {
				onStubOnly = append(onStubOnly, ev)
			}
		}
		var batches []store.Batch
		for {
			b, ok, err := st.FormBatch(ctx, "eth", 4)
			require.NoError(t, err)
			if !ok {
				break
			}
			batches = append(batches, b)
		}
		require.Len(t, batches, 2)
		assert.Equal(t, 4, batches[0].Size)
		assert.Equal(t, 2, batches[1].Size)
		for i, ev := range onEth {
			a := anchorOn(t, get(t, st, ev.ID), "eth")
			assert.Equal(t, store.StatusBatched, a.Status, "evidence %d", i)
			assert.Equal(t, batches[i/4].ID, a.BatchID, "evidence %d", i)
			assert.Equal(t, i%4, a.LeafIndex, "evidence %d", i)
		}
		for _, ev := range onStubOnly {
			assert.Equal(t, store.StatusPending, get(t, st, ev.ID).Status)
		}
		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, 6, pending["stub"].Count, "the stub-only evidence and those on both chains")
		assert.Zero(t, pending["eth"].Count)
	})
}

// An evidence whose outbox row a keeper from before migration 9 wrote (one
// still running beside a newer one, on the same store) is batched from that
// row once, and never again from its lane.
func TestAnEvidenceWithAnOutboxRowWrittenAtIntakeIsBatchedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		old := insert(t, st, store.NewEvidence{Digest: digestOf("old"), Chains: []string{"stub"}, Priority: 5})
		require.NoError(t, store.Exec(ctx, st, `INSERT INTO outbox (evidence_seq, chain, priority) SELECT seq, 'stub', 5 FROM evidence WHERE id = ?`, old.ID))
		next := insert(t, st, store.NewEvidence{Digest: digestOf("next"), Chains: []string{"stub"}, Priority: 5})

		first := formOne(t, st, "stub", 10)
		assert.Equal(t, 1, first.Size)
		assert.Equal(t, first.ID, anchorOn(t, get(t, st, old.ID), "stub").BatchID)
		second := formOne(t, st, "stub", 10)
		assert.Equal(t, 1, second.Size, "the lane takes the evidence without a row")
		assert.Equal(t, second.ID, anchorOn(t, get(t, st, next.ID), "stub").BatchID)
		_, ok, err := st.FormBatch(ctx, "stub", 10)
		require.NoError(t, err)
		assert.False(t, ok)
	})
}

// On PostgreSQL intake commits in parallel, so an evidence can be given its
// intake sequence before another that commits first. Forming a batch waits
// for the intake that is still open instead of moving its lane's cursor
// past that evidence, which would leave it pending for ever.
func TestABatchFormedWhileAnIntakeIsOpenNeverPassesOverItsEvidence(t *testing.T) {
	for _, b := range storetest.Backends {
		if b.Name != "postgres" {
			continue // SQLite's one writer commits intake in sequence order
		}
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			ctx := context.Background()
			first := insert(t, st, store.NewEvidence{Digest: digestOf("first"), Chains: []string{"stub"}, Priority: 5})
			commit, rollback, err := store.HeldIntake(ctx, st, store.NewEvidence{Digest: digestOf("late"), Chains: []string{"stub"}, Priority: 5})
			require.NoError(t, err)
			defer rollback() // a test that fails early must not leave it open: the cleanup would wait on its locks
			third := insert(t, st, store.NewEvidence{Digest: digestOf("third"), Chains: []string{"stub"}, Priority: 5})

			formed := make(chan store.Batch, 1)
			go func() {
				b, _, err := st.FormBatch(ctx, "stub", 10)
				assert.NoError(t, err)
				formed <- b
			}()
			// The batch waits for the open intake; only then does it commit.
			require.Eventually(t, func() bool {
				n, err := store.WaitingAdvisoryLocks(ctx, st)
				return err == nil && n > 0
			}, 10*time.Second, 10*time.Millisecond, "forming a batch must wait for the open intake")
			require.NoError(t, commit())
			b := <-formed
			assert.Equal(t, 3, b.Size, "the late evidence is in the batch with the others")
			for _, ev := range listAll(t, st, "") {
				assert.Equal(t, store.StatusBatched, ev.Status, "evidence %s", ev.ID)
			}
			assert.Equal(t, b.ID, anchorOn(t, get(t, st, first.ID), "stub").BatchID)
			assert.Equal(t, b.ID, anchorOn(t, get(t, st, third.ID), "stub").BatchID)
		})
	}
}

// A dispatcher that decided to form a batch on the chain's newest batch
// forms nothing when another node formed one since: nodes deciding at the
// same moment form one batch between them, not one each.
func TestABatchDecidedOnAnOlderBatchIsNotFormedAfterANewerOne(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		insert(t, st, store.NewEvidence{Digest: digestOf("one"), Chains: []string{"eth"}, Priority: 5})
		first, ok, err := st.FormBatch(ctx, "eth", 10)
		require.NoError(t, err)
		require.True(t, ok)
		seen := first.CreatedAt
		time.Sleep(5 * time.Millisecond) // the next batch is formed a millisecond later at least

		insert(t, st, store.NewEvidence{Digest: digestOf("two"), Chains: []string{"eth"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("three"), Chains: []string{"eth"}, Priority: 5})
		second, ok, err := st.FormBatchAfter(ctx, "eth", 10, seen) // the node that formed it, or one that saw it
		require.NoError(t, err)
		require.True(t, ok, "no batch newer than the one seen: formed")
		assert.Equal(t, 2, second.Size)

		insert(t, st, store.NewEvidence{Digest: digestOf("four"), Chains: []string{"eth"}, Priority: 5})
		_, ok, err = st.FormBatchAfter(ctx, "eth", 10, seen) // a node that decided on the first batch alone
		require.NoError(t, err)
		assert.False(t, ok, "a batch newer than the one seen: nothing formed")
		third, ok, err := st.FormBatchAfter(ctx, "eth", 10, time.Time{})
		require.NoError(t, err)
		require.True(t, ok, "a zero seen forms regardless")
		assert.Equal(t, 1, third.Size, "the evidence left by the refused form is in the next batch")
	})
}
