package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestArchivingMovesOnlyOldConfirmedEvidenceAndKeepsTheRestVerifiable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ev1 := insert(t, st, store.NewEvidence{Digest: digestOf("1"), Chains: []string{"eth"}, Priority: 5, IdempotencyKey: "k1"})
		ev2 := insert(t, st, store.NewEvidence{Digest: digestOf("2"), Chains: []string{"eth"}, Priority: 5})
		ev3 := insert(t, st, store.NewEvidence{Digest: digestOf("3"), Chains: []string{"eth", "stub"}, Priority: 5})
		cutoff := nextMillisecond(t)
		nextMillisecond(t)
		ev4 := insert(t, st, store.NewEvidence{Digest: digestOf("4"), Chains: []string{"eth"}, Priority: 5})
		batch := formOne(t, st, "eth", 10)
		root := confirm(t, st, batch, "0xa", 1)
		ev3Path := pathOf(t, st, anchorOn(t, get(t, st, ev3.ID), "eth"))
		require.NotEmpty(t, ev3Path)

		failing := func([]store.Evidence) (string, error) { return "", errors.New("disk full") }
		_, err := st.ArchiveConfirmed(ctx, cutoff, 1000, failing)
		require.ErrorContains(t, err, "disk full")
		assert.Equal(t, store.StatusConfirmed, get(t, st, ev1.ID).Status, "nothing moves when the archive was not written")

		var written []store.Evidence
		n, err := st.ArchiveConfirmed(ctx, cutoff, 1000, func(evs []store.Evidence) (string, error) {
			written = evs
			return "receipts-1.jsonl.gz", nil
		})
		require.NoError(t, err)
		assert.Equal(t, 2, n, "ev3 still awaits its other chain; ev4 is younger than the cutoff")
		require.Equal(t, []string{ev1.ID, ev2.ID}, ids(written))
		for _, ev := range written {
			a := anchorOn(t, ev, "eth")
			assert.Equal(t, [32]byte(root), a.Root)
			assert.NotEmpty(t, pathOf(t, st, a), "the archive gets what whole receipts need")
		}
		for _, id := range []string{ev1.ID, ev2.ID} {
			_, err := st.GetEvidence(ctx, id)
			assert.ErrorIs(t, err, store.ErrNotFound)
			a, err := st.ArchivedIn(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, "receipts-1.jsonl.gz", a.File)
			assert.Equal(t, 2, a.Size)
		}
		_, err = st.ArchivedIn(ctx, ev3.ID)
		assert.ErrorIs(t, err, store.ErrNotFound)
		assert.Equal(t, ev3Path, pathOf(t, st, anchorOn(t, get(t, st, ev3.ID), "eth")), "the batch kept its leaves: the audit path of the evidence left in it is unchanged")
		assert.Equal(t, store.StatusConfirmed, get(t, st, ev4.ID).Status)

		n, err = st.ArchiveConfirmed(ctx, cutoff, 1000, func([]store.Evidence) (string, error) { return "never", nil })
		require.NoError(t, err)
		assert.Zero(t, n, "nothing more is old and confirmed")

		confirm(t, st, formOne(t, st, "stub", 10), "stub:1", 1)
		n, err = st.ArchiveConfirmed(ctx, time.Now(), 1000, func([]store.Evidence) (string, error) { return "receipts-2.jsonl.gz", nil })
		require.NoError(t, err)
		assert.Equal(t, 2, n, "ev3, now confirmed on both chains, and ev4")
		_, err = st.GetBatch(ctx, batch.ID)
		assert.ErrorIs(t, err, store.ErrNotFound, "a batch whose every evidence was archived goes")
		txs, err := st.Transactions(ctx, batch.ID)
		require.NoError(t, err)
		assert.Empty(t, txs)
	})
}
