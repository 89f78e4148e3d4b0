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

// TestThreeNodesSharingOneStoreBatchEveryOutboxRowExactlyOnce is three
// `keeper api` nodes on one store: each has its own Store (its own
// connections, its own intake committer) and runs a dispatcher's batch
// formation loop, all at once, over a few thousand pending evidence while
// more keep arriving. Every (evidence, chain) must land in exactly one batch,
// nothing may be left pending, and evidence on two chains batched by two
// different nodes must still read as batched.
func TestThreeNodesSharingOneStoreBatchEveryOutboxRowExactlyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		const (
			waiting  = 2400 // pending before the dispatchers start
			arriving = 600  // taken in while they run
			maxItems = 20   // small batches: many claims, much contention
		)
		ctx := context.Background()
		where := db.Fresh(t)
		nodes := make([]*store.Store, 3)
		for i := range nodes {
			nodes[i] = storetest.Open(t, where)
			defer nodes[i].Close()
		}
		chainsOf := func(i int) []string {
			switch i % 3 {
			case 0:
				return []string{"etherlink", "solana"}
			case 1:
				return []string{"etherlink"}
			}
			return []string{"solana"}
		}
		// intake posts evidence from..to through the nodes in turn, eight
		// requests at a time.
		intake := func(from, to int) {
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := from + w; i < to; i += 8 {
						_, _, err := nodes[i%3].InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("ev", i)), Chains: chainsOf(i), Priority: 1 + i%10})
						if !assert.NoError(t, err) {
							return
						}
					}
				}()
			}
			wg.Wait()
		}
		intake(0, waiting)

		var (
			intakeDone = make(chan struct{})
			formed     = make([][]store.Batch, len(nodes))
			wg         sync.WaitGroup
		)
		for n, st := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					// Read before the pending check: once intake is done and
					// nothing is pending, nothing more will be.
					done := false
					select {
					case <-intakeDone:
						done = true
					default:
					}
					pending, err := st.PendingUpTo(ctx, maxItems)
					if !assert.NoError(t, err) {
						return
					}
					if len(pending) == 0 && done {
						return
					}
					for _, chain := range []string{"etherlink", "solana"} {
						b, ok, err := st.FormBatch(ctx, chain, maxItems)
						if !assert.NoError(t, err) {
							return
						}
						if ok {
							formed[n] = append(formed[n], b)
						}
					}
				}
			}()
		}
		intake(waiting, waiting+arriving)
		close(intakeDone)
		wg.Wait()
		if t.Failed() {
			return
		}

		// Every (chain, digest) in exactly one batch.
		type anchor struct {
			chain  string
			digest [32]byte
		}
		seen := map[anchor]int{}
		batchIDs := map[int64]bool{}
		for n, bs := range formed {
			assert.NotEmpty(t, bs, "node %d formed no batch: the nodes did not run at once", n)
			for _, b := range bs {
				require.False(t, batchIDs[b.ID], "batch %d reported twice", b.ID)
				batchIDs[b.ID] = true
				ds, err := nodes[0].BatchDigests(ctx, b.ID)
				require.NoError(t, err)
				require.Len(t, ds, b.Size, "batch %d holds what it says", b.ID)
				for _, d := range ds {
					seen[anchor{b.Chain, [32]byte(d)}]++
				}
			}
		}
		want := 0
		for i := range waiting + arriving {
			for _, c := range chainsOf(i) {
				want++
				k := anchor{c, digestOf(fmt.Sprint("ev", i))}
				assert.Equal(t, 1, seen[k], "evidence %d on %s batched %d times", i, c, seen[k])
			}
		}
		assert.Len(t, seen, want, "no batch holds anything that was not taken in")

		// Nothing left behind, and every evidence reads as batched with a
		// batch on each of its chains.
		pending, err := nodes[1].PendingChains(ctx)
		require.NoError(t, err)
		assert.Empty(t, pending)
		n, err := nodes[2].PendingCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		all := listAll(t, nodes[0], "")
		require.Len(t, all, waiting+arriving)
		for _, ev := range all {
			assert.Equal(t, store.StatusBatched, ev.Status, "evidence %s", ev.ID)
			for _, a := range ev.Anchors {
				assert.True(t, batchIDs[a.BatchID], "evidence %s on %s is in batch %d, which no node formed", ev.ID, a.Chain, a.BatchID)
			}
		}
		t.Logf("%s: batches formed per node: %d, %d, %d", db.Name, len(formed[0]), len(formed[1]), len(formed[2]))
	})
}

func TestTwoNodesTakingInOneIdempotencyKeyAtOnceStoreOneEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		nodes := []*store.Store{storetest.Open(t, where), storetest.Open(t, where)}
		for _, st := range nodes {
			defer st.Close()
		}
		const n = 20
		var (
			wg      sync.WaitGroup
			ids     [n]string
			created [n]bool
			errs    [n]error
			start   = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ev, c, err := nodes[i%2].InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint(i)), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "one-key"})
				ids[i], created[i], errs[i] = ev.ID, c, err
			}()
		}
		close(start)
		wg.Wait()
		nCreated := 0
		for i := range n {
			require.NoError(t, errs[i], "request %d", i)
			assert.Equal(t, ids[0], ids[i], "request %d", i)
			if created[i] {
				nCreated++
			}
		}
		assert.Equal(t, 1, nCreated)
		assert.Len(t, listAll(t, nodes[1], ""), 1)
	})
}
