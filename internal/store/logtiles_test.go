package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// A log written a row per entry and per hash (before migration 16) is the
// same log after the migration moves it into tiles: the same entries at the
// same indexes, each evidence at its index, the same root, inclusion
// proofs that verify, and appends that go on from where it was.
func TestALogStoredARowPerEntryIsTheSameLogInTilesAfterTheMigration(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		old, err := store.OpenAtVersion(ctx, where, 15)
		require.NoError(t, err)
		const n = 600 // two whole tiles and part of a third
		var nes []store.NewEvidence
		for i := range n {
			nes = append(nes, store.NewEvidence{Digest: [32]byte{byte(i), byte(i >> 8), 7}, Chains: []string{"stub"}, Priority: 5})
		}
		ins, err := old.InsertEvidenceBatch(ctx, nes)
		require.NoError(t, err)
		hashes := map[int64]tlog.Hash{}
		reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(ids))
			for i, id := range ids {
				out[i] = hashes[id]
			}
			return out, nil
		})
		entries := make([][32]byte, n)
		for i, in := range ins {
			require.NoError(t, in.Err)
			entries[i] = evlog.EntryOf(in.Evidence.Salt, in.Evidence.Digest)
			hs, err := tlog.StoredHashesForRecordHash(int64(i), tlog.RecordHash(entries[i][:]), reader)
			require.NoError(t, err)
			first := tlog.StoredHashIndex(0, int64(i))
			for j, h := range hs {
				hashes[first+int64(j)] = h
				if j > 0 { // the old log stored the hashes above the leaves
					require.NoError(t, store.Exec(ctx, old, `INSERT INTO log_hashes (id, hash) VALUES (?, ?)`, first+int64(j), h[:]))
				}
			}
			require.NoError(t, store.Exec(ctx, old, `INSERT INTO log_entries (idx, evidence_seq, entry) SELECT ?, seq, ? FROM evidence WHERE id = ?`,
				i, entries[i][:], in.Evidence.ID))
		}
		require.NoError(t, store.Exec(ctx, old, `UPDATE log_state SET size = ?, seq = (SELECT MAX(seq) FROM evidence) WHERE id = 1`, n))
		root, err := tlog.TreeHash(n, reader)
		require.NoError(t, err)
		require.NoError(t, old.Close())

		s := storetest.Open(t, where)
		got, err := s.LogEntries(ctx, 0, n)
		require.NoError(t, err)
		assert.Equal(t, entries, got, "the same entries at the same indexes")
		for _, i := range []int{0, 1, 255, 256, 511, 512, 599} {
			idx, ok, err := s.LogIndexOf(ctx, ins[i].Evidence.ID)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, uint64(i), idx, "evidence %d", i)
		}
		th, err := tlog.TreeHash(n, s.LogHashReader(ctx))
		require.NoError(t, err)
		assert.Equal(t, root, th, "the same root")
		for _, i := range []int64{0, 300, 599} {
			p, err := tlog.ProveRecord(n, i, s.LogHashReader(ctx))
			require.NoError(t, err)
			require.NoError(t, tlog.CheckRecord(p, n, root, i, tlog.RecordHash(entries[i][:])), "inclusion of %d", i)
		}

		more, err := s.InsertEvidenceBatch(ctx, nes[:100])
		require.NoError(t, err)
		size, newRoot, taken, err := s.AppendLog(ctx, 1000)
		require.NoError(t, err)
		assert.Equal(t, 100, taken)
		assert.Equal(t, uint64(n+100), size)
		for i, in := range more {
			e := evlog.EntryOf(in.Evidence.Salt, in.Evidence.Digest)
			hs, err := tlog.StoredHashesForRecordHash(int64(n+i), tlog.RecordHash(e[:]), reader)
			require.NoError(t, err)
			first := tlog.StoredHashIndex(0, int64(n+i))
			for j, h := range hs {
				hashes[first+int64(j)] = h
			}
		}
		want, err := tlog.TreeHash(n+100, reader)
		require.NoError(t, err)
		assert.Equal(t, want, tlog.Hash(newRoot), fmt.Sprintf("appends go on at %d", n))
	})
}
