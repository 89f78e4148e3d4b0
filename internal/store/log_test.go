package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/merkle"
)

// TestTheLogTakesEveryEvidenceOnceInIntakeOrderWhileIntakeGoesOn appends
// to the log from three nodes sharing one store while evidence keeps
// arriving: every evidence gets exactly one index, indexes are gap-free,
// each entry is SHA-256(salt ‖ digest) of its evidence, and the root the
// store reports is the RFC 6962 root keeper's own merkle package computes
// over the entries — and every inclusion and consistency proof built from
// the stored hashes verifies with golang.org/x/mod/sumdb/tlog.
func TestTheLogTakesEveryEvidenceOnceInIntakeOrderWhileIntakeGoesOn(t *testing.T) {
	eachBackend(t, func(t *testing.T, db backend) {
		ctx := context.Background()
		where := db.fresh(t)
		nodes := make([]*store.Store, 3)
		for i := range nodes {
			nodes[i] = openAt(t, where)
			defer nodes[i].Close()
		}
		const total = 900
		var (
			wg    sync.WaitGroup
			stop  = make(chan struct{})
			sizes = make([][]uint64, len(nodes))
		)
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					size, _, _, err := n.AppendLog(ctx, 37)
					if !assert.NoError(t, err) {
						return
					}
					sizes[i] = append(sizes[i], size)
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
		var intake sync.WaitGroup
		for w := range 6 {
			intake.Add(1)
			go func() {
				defer intake.Done()
				for i := w; i < total; i += 6 {
					_, _, err := nodes[i%3].InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("log", i)), Chains: []string{"etherlink"}, Priority: 5})
					if !assert.NoError(t, err) {
						return
					}
				}
			}()
		}
		intake.Wait()
		close(stop)
		wg.Wait()
		for {
			_, _, taken, err := nodes[0].AppendLog(ctx, 1000)
			require.NoError(t, err)
			if taken == 0 {
				break
			}
		}
		for _, s := range sizes {
			for i := 1; i < len(s); i++ {
				require.LessOrEqual(t, s[i-1], s[i], "a node saw the log shrink")
			}
		}
		size, err := nodes[1].LogSize(ctx)
		require.NoError(t, err)
		require.EqualValues(t, total, size)
		entries, err := nodes[2].LogEntries(ctx, 0, size)
		require.NoError(t, err)
		seen := map[[32]byte]bool{}
		evs, _, err := nodes[0].ListEvidence(ctx, store.ListFilter{Limit: total})
		require.NoError(t, err)
		require.Len(t, evs, total)
		for _, ev := range evs {
			seen[evlog.EntryOf(ev.Salt, ev.Digest)] = true
		}
		leaves := make([][]byte, len(entries))
		for i, e := range entries {
			require.True(t, seen[e], "entry %d is no evidence's salted commitment", i)
			delete(seen, e)
			leaves[i] = e[:]
		}
		require.Empty(t, seen, "evidence missing from the log")
		for _, ev := range evs {
			idx, ok, err := nodes[0].LogIndexOf(ctx, ev.ID)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, evlog.EntryOf(ev.Salt, ev.Digest), entries[idx])
		}

		_, root, _, err := nodes[0].AppendLog(ctx, 1)
		require.NoError(t, err)
		tree, err := merkle.Build(leaves)
		require.NoError(t, err)
		assert.Equal(t, [32]byte(tree.Root()), root)

		r := nodes[1].LogHashReader(ctx)
		for _, i := range []int64{0, 1, 255, 256, 511, total - 1} {
			p, err := tlog.ProveRecord(total, i, r)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckRecord(p, total, root, i, tlog.RecordHash(entries[i][:])), "inclusion of %d", i)
		}
		for _, m := range []int64{1, 7, 256, 300, total - 1} {
			old, err := tlog.TreeHash(m, r)
			require.NoError(t, err)
			p, err := tlog.ProveTree(total, m, r)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckTree(p, total, root, m, old), "consistency from %d", m)
		}
	})
}

// TestALogKeepsTheKeyItWasFirstSignedWith: a checkpoint signed with
// another key is refused, so a worker given the wrong key file cannot
// start a second history in the same store.
func TestALogKeepsTheKeyItWasFirstSignedWith(t *testing.T) {
	eachBackend(t, func(t *testing.T, db backend) {
		ctx := context.Background()
		s := db.openStore(t)
		_, _, err := s.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("k"), Chains: []string{"etherlink"}, Priority: 5})
		require.NoError(t, err)
		size, root, _, err := s.AppendLog(ctx, 10)
		require.NoError(t, err)
		sign := func() (string, []byte) {
			skey, _, err := evlog.GenerateKey("test.example/log")
			require.NoError(t, err)
			sg, err := evlog.NewSigner(skey, "test.example/log")
			require.NoError(t, err)
			note, err := sg.Sign(evlog.Checkpoint{Origin: "test.example/log", Size: size, Root: root})
			require.NoError(t, err)
			return sg.Key().Text, note
		}
		k1, n1 := sign()
		require.NoError(t, s.SaveCheckpoint(ctx, store.LogCheckpoint{Size: size, Root: root, Note: n1}, k1))
		k2, n2 := sign()
		require.ErrorIs(t, s.SaveCheckpoint(ctx, store.LogCheckpoint{Size: size, Root: root, Note: n2}, k2), store.ErrLogKey)
		got, err := s.LatestCheckpoint(ctx)
		require.NoError(t, err)
		assert.Equal(t, n1, got.Note)
		key, err := s.LogKey(ctx)
		require.NoError(t, err)
		assert.Equal(t, k1, key)
	})
}

// pathOf is a batch anchor's audit path, from its batch's leaf hashes as
// receipt.Build reads them.
func pathOf(t *testing.T, st *store.Store, a store.AnchorState) []merkle.Hash {
	t.Helper()
	leaves, err := st.BatchLeafHashes(context.Background(), a.BatchID)
	require.NoError(t, err)
	hs := make([]merkle.Hash, len(leaves))
	for i, h := range leaves {
		hs[i] = h
	}
	tree, err := merkle.FromLeafHashes(hs)
	require.NoError(t, err)
	path, err := tree.Path(a.LeafIndex)
	require.NoError(t, err)
	return path
}

// A batch's checkpoint is fixed by its first submit and moves only forward,
// and only while the batch is not confirmed (a Solana re-sign after every
// transaction of it expired unseen).
func TestABatchsCheckpointMovesOnlyForwardAndNeverOnceConfirmed(t *testing.T) {
	eachBackend(t, func(t *testing.T, db backend) {
		st := db.openStore(t)
		ctx := context.Background()
		insert(t, st, store.NewEvidence{Digest: digestOf("moves"), Chains: []string{"solana"}, Priority: 5})
		b := formOne(t, st, "solana", 1)

		size, err := st.AdvanceBatchCheckpoint(ctx, b.ID, 9)
		require.NoError(t, err)
		assert.Zero(t, size, "a batch without a checkpoint gets none this way")
		size, err = st.BatchCheckpoint(ctx, b.ID, 3)
		require.NoError(t, err)
		require.Equal(t, uint64(3), size)

		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 2)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), size, "never back")
		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 7)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size)
		size, err = st.BatchCheckpoint(ctx, b.ID, 11)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size, "a first submit's fixing does not move it")

		confirm(t, st, b, "sig", 1)
		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 20)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size, "a confirmed batch's receipts name the tree its transaction carries")
		got, err := st.BatchLogSize(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), got)
	})
}
