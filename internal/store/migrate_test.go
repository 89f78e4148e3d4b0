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
	"github.com/keeperhq/keeper/merkle"
)

// ids returns the ids of evs, in order.
func ids(evs []store.Evidence) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// A keeper older than its database's schema (a newer keeper migrated it,
// then the old binary was started again) does not open it, says what to do,
// and leaves it as it was (docs/production.md, "Rolling out a new build").
func TestOpeningADatabaseANewerKeeperMigratedFailsAndLeavesItAsItWas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		st := storetest.Open(t, where)
		newer := store.LatestMigration + 1
		require.NoError(t, store.Exec(ctx, st, `CREATE TABLE from_a_newer_keeper (id INTEGER PRIMARY KEY)`))
		require.NoError(t, store.Exec(ctx, st, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, newer, int64(1_700_000_000_000)))
		require.NoError(t, st.Close())
		cols, applied, err := store.Schema(ctx, where)
		require.NoError(t, err)
		require.Contains(t, applied, newer)

		reopened, err := storetest.TryOpen(where)
		if err == nil {
			reopened.Close()
		}
		var tooNew *store.NewerSchemaError
		require.ErrorAs(t, err, &tooNew)
		assert.Equal(t, store.NewerSchemaError{Version: newer, Known: store.LatestMigration}, *tooNew)
		assert.Contains(t, err.Error(), fmt.Sprintf("store: the database's schema is at migration %d, this keeper knows up to %d: "+
			"a newer keeper migrated it; run that keeper (or newer), or restore a backup taken before the upgrade", newer, store.LatestMigration))

		colsAfter, appliedAfter, err := store.Schema(ctx, where)
		require.NoError(t, err)
		assert.Equal(t, cols, colsAfter, "no table or column changed")
		assert.Equal(t, applied, appliedAfter, "no migration recorded or removed")
	})
}

// A store written by a keeper before migration 7 (which stored each
// evidence's status, attempts and last error, each anchor's state and every
// audit path) reads the same after it: statuses, attempts, errors and
// receipt paths now derived from the batches, and its pending evidence
// still batched.
func TestEvidenceStoredBeforeWriteOnceReadsTheSameAfterTheMigration(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		old, err := store.OpenAtVersion(ctx, where, 6)
		require.NoError(t, err)
		exec := func(q string, args ...any) {
			t.Helper()
			require.NoError(t, store.Exec(ctx, old, q, args...))
		}
		at := time.UnixMilli(1_700_000_000_000).UTC()
		salt := func(i byte) []byte { return []byte{i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i} }
		type row struct {
			seq            int64
			chains, status string
			attempts       int
			lastErr        string
		}
		evs := []row{
			{1, "eth,stub", "submitted", 2, "eth: timeout"}, // its eth batch was retried: a RecordAttempt wrote every evidence of the batch
			{2, "eth", "confirmed", 2, "eth: timeout"},
			{3, "eth", "confirmed", 2, "eth: timeout"},
			{4, "stub", "dead_letter", 4, "stub: nonce too low"},
			{5, "eth", "pending", 0, ""},
		}
		for _, e := range evs {
			d := digestOf(string(rune('a' + e.seq)))
			exec(`INSERT INTO evidence (seq, id, digest, salt, chains, priority, status, attempts, last_error, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, 5, ?, ?, ?, ?, ?)`, e.seq, "ev_"+string(rune('0'+e.seq)), d[:], salt(byte(e.seq)), e.chains, e.status, e.attempts, e.lastErr, at.UnixMilli(), at.UnixMilli())
		}
		var leaves [][]byte
		for seq := int64(1); seq <= 3; seq++ {
			d := digestOf(string(rune('a' + seq)))
			leaves = append(leaves, append(salt(byte(seq)), d[:]...))
		}
		tree, err := merkle.Build(leaves)
		require.NoError(t, err)
		root := tree.Root()
		exec(`INSERT INTO batches (id, chain, size, priority, state, root, tx_ref, block, block_time, attempts, last_error, created_at, updated_at, network, block_hash, finality)
			VALUES (1, 'eth', 3, 5, 'confirmed', ?, '0xabc', 7, ?, 2, 'eth: timeout', ?, ?, 'eip155:1', '0xb10c', 'finalized')`, root[:], at.UnixMilli(), at.UnixMilli(), at.UnixMilli())
		exec(`INSERT INTO batches (id, chain, size, priority, state, tx_ref, created_at, updated_at) VALUES (2, 'stub', 1, 5, 'submitted', 'stub:1', ?, ?)`, at.UnixMilli(), at.UnixMilli())
		exec(`INSERT INTO batches (id, chain, size, priority, state, attempts, last_error, created_at, updated_at) VALUES (3, 'stub', 1, 5, 'dead_letter', 4, 'stub: nonce too low', ?, ?)`, at.UnixMilli(), at.UnixMilli())
		for i, seq := range []int64{1, 2, 3} {
			var path []byte
			for _, h := range tree.Paths()[i] {
				path = append(path, h[:]...)
			}
			exec(`INSERT INTO outbox (evidence_seq, chain, priority, state, batch_id, leaf_index, path) VALUES (?, 'eth', 5, 'confirmed', 1, ?, ?)`, seq, i, path)
		}
		exec(`INSERT INTO outbox (evidence_seq, chain, priority, state, batch_id, leaf_index) VALUES (1, 'stub', 5, 'submitted', 2, 0)`)
		exec(`INSERT INTO outbox (evidence_seq, chain, priority, state, batch_id, leaf_index) VALUES (4, 'stub', 5, 'dead_letter', 3, 0)`)
		exec(`INSERT INTO outbox (evidence_seq, chain, priority, state) VALUES (5, 'eth', 5, 'pending')`)
		if store.IsPostgresURL(where) {
			exec(`SELECT setval(pg_get_serial_sequence('batches', 'id'), 3), setval(pg_get_serial_sequence('evidence', 'seq'), 5)`)
		}
		require.NoError(t, old.Close())

		st := storetest.Open(t, where)
		t.Cleanup(func() { st.Close() })

		for i, e := range evs {
			got := get(t, st, "ev_"+string(rune('0'+e.seq)))
			assert.Equal(t, store.Status(e.status), got.Status, "evidence %d", e.seq)
			assert.Equal(t, e.attempts, got.Attempts, "evidence %d", e.seq)
			assert.Equal(t, e.lastErr, got.LastError, "evidence %d", e.seq)
			if i > 2 {
				continue
			}
			a := anchorOn(t, got, "eth")
			require.Equal(t, store.StatusConfirmed, a.Status)
			assert.Equal(t, i, a.LeafIndex)
			assert.Equal(t, 3, a.TreeSize)
			assert.Equal(t, [32]byte(root), a.Root)
			assert.Equal(t, "0xabc", a.TxRef)
			assert.Equal(t, "eip155:1", a.Network)
			path := pathOf(t, st, a)
			require.Len(t, path, len(tree.Paths()[i]))
			for j, h := range tree.Paths()[i] {
				assert.Equal(t, h, path[j], "evidence %d, path hash %d", e.seq, j)
			}
		}
		assert.Equal(t, "stub:1", anchorOn(t, get(t, st, "ev_1"), "stub").TxRef)

		for status, want := range map[store.Status][]string{
			store.StatusPending:    {"ev_5"},
			store.StatusSubmitted:  {"ev_1"},
			store.StatusConfirmed:  {"ev_2", "ev_3"},
			store.StatusDeadLetter: {"ev_4"},
			store.StatusBatched:    {},
		} {
			assert.Equal(t, want, ids(listAll(t, st, status)), "listing %s evidence", status)
		}
		n, err := st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)

		b := formOne(t, st, "eth", 10)
		assert.Equal(t, 1, b.Size)
		assert.Equal(t, store.StatusBatched, get(t, st, "ev_5").Status)
		retried, err := st.RetryEvidence(ctx, "ev_4")
		require.NoError(t, err)
		assert.Equal(t, store.StatusPending, retried.Status)
		assert.Equal(t, 0, retried.Attempts, "a retried evidence starts its attempts again")

		// Evidence taken in after the migration waits on its lane (no outbox
		// row); the retried anchor, which has its row, is batched first.
		fresh, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("fresh"), Chains: []string{"stub"}, Priority: 1})
		require.NoError(t, err)
		n, err = st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		first := formOne(t, st, "stub", 10)
		assert.Equal(t, 1, first.Size)
		assert.Equal(t, store.StatusBatched, get(t, st, "ev_4").Status)
		assert.Equal(t, store.StatusPending, get(t, st, fresh.ID).Status)
		second := formOne(t, st, "stub", 10)
		assert.Equal(t, 1, second.Size)
		assert.Equal(t, 1, second.Priority)
		assert.Equal(t, second.ID, anchorOn(t, get(t, st, fresh.ID), "stub").BatchID)
		_, ok, err := st.FormBatch(ctx, "stub", 10)
		require.NoError(t, err)
		assert.False(t, ok, "nothing is left to batch")
	})
}
