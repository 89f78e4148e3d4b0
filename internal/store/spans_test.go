package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// leafOf is the Merkle leaf of an evidence as a batch's leaves hold it.
func leafOf(ev store.Evidence) string {
	return string(append(append([]byte{}, ev.Salt...), ev.Digest[:]...))
}

// assertReceiptsMatchLeaves checks that each batch's leaves are its
// evidence, each at the leaf index its receipt anchor on chain names, and
// no other.
func assertReceiptsMatchLeaves(t *testing.T, st *store.Store, chain string, evs []store.Evidence) map[int64][]string {
	t.Helper()
	ctx := context.Background()
	byBatch := map[int64][]string{}
	for _, ev := range evs {
		a := anchorOn(t, get(t, st, ev.ID), chain)
		if a.BatchID == 0 {
			continue
		}
		leaves, err := st.BatchLeaves(ctx, a.BatchID)
		require.NoError(t, err)
		require.Less(t, a.LeafIndex, len(leaves), "evidence %s", ev.ID)
		assert.Equal(t, leafOf(ev), string(leaves[a.LeafIndex]), "evidence %s is leaf %d of batch %d", ev.ID, a.LeafIndex, a.BatchID)
		assert.Equal(t, len(leaves), a.TreeSize)
		digests, err := st.BatchDigests(ctx, a.BatchID)
		require.NoError(t, err)
		assert.Equal(t, ev.Digest[:], digests[a.LeafIndex])
		byBatch[a.BatchID] = append(byBatch[a.BatchID], ev.ID)
	}
	for id, members := range byBatch {
		leaves, err := st.BatchLeaves(ctx, id)
		require.NoError(t, err)
		assert.Len(t, leaves, len(members), "batch %d holds exactly the evidence anchored in it", id)
	}
	return byBatch
}

// A batch taken from several lanes (priorities) of a chain whose evidence
// is interleaved with another chain's, next to an evidence batched from an
// outbox row, gives each evidence the leaf its receipt names: the urgent
// lane first, each lane in intake order.
func TestAnEvidencesReceiptAnchorIsItsLeafInItsBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var onEth []store.Evidence
		for i := range 30 {
			chains := [][]string{{"eth"}, {"stub"}, {"eth", "stub"}}[i%3]
			prio := []int{5, 1, 5, 7, 1}[i%5]
			ev := insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("spans", i)), Chains: chains, Priority: prio})
			if i == 9 {
				// A row a keeper from before migration 9 wrote: not in a span.
				require.NoError(t, store.Exec(ctx, st, `INSERT INTO outbox (evidence_seq, chain, priority) SELECT seq, 'eth', ? FROM evidence WHERE id = ?`, prio, ev.ID))
			}
			if chains[0] == "eth" {
				onEth = append(onEth, ev)
			}
		}
		first := formOne(t, st, "eth", 100)
		assert.Equal(t, 1, first.Size, "the outbox row goes first, alone")
		var (
			sizes []int
			lanes []int64
		)
		for {
			b, ok, err := st.FormBatch(ctx, "eth", 7)
			require.NoError(t, err)
			if !ok {
				break
			}
			sizes, lanes = append(sizes, b.Size), append(lanes, b.ID)
		}
		assert.Equal(t, []int{7, 7, 5}, sizes)
		byBatch := assertReceiptsMatchLeaves(t, st, "eth", onEth)
		assert.Len(t, byBatch, 4)
		for _, ev := range onEth {
			a := anchorOn(t, get(t, st, ev.ID), "eth")
			require.NotZero(t, a.BatchID, "evidence %s", ev.ID)
			assert.Equal(t, store.StatusBatched, a.Status)
		}

		// The first lane batch: priority 1 before 5 before 7, each by intake.
		lane := byBatch[lanes[0]]
		prios := make([]int, len(lane))
		for _, id := range lane {
			a := anchorOn(t, get(t, st, id), "eth")
			prios[a.LeafIndex] = get(t, st, id).Priority
		}
		assert.IsNonDecreasing(t, prios)
		assert.Len(t, listAll(t, st, store.StatusBatched), 10, "those only on eth; those on stub too wait there")

		// Confirmed, they are confirmed with the same leaves.
		for id := range byBatch {
			require.NoError(t, st.ConfirmBatch(ctx, id, store.Confirmation{TxRef: fmt.Sprint("0x", id), Block: 1}))
		}
		assertReceiptsMatchLeaves(t, st, "eth", onEth)
		n, err := st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 20, n, "the evidence on stub waits on its lane")
	})
}

// An evidence of a dead-lettered batch formed from the lanes, re-driven,
// goes into exactly one new batch; the batch's other evidence keep their
// leaves, and are re-driven once each later.
func TestARedrivenEvidenceOfALaneBatchIsAnchoredAgainExactlyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var evs []store.Evidence
		for i := range 6 {
			evs = append(evs, insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("redrive", i)), Chains: []string{"stub"}, Priority: 5 - i%2}))
		}
		dead := formOne(t, st, "stub", 100)
		require.Equal(t, 6, dead.Size)
		require.NoError(t, st.DeadLetterBatch(ctx, dead.ID, "stub: down"))
		before := map[string]int{}
		for _, ev := range evs {
			before[ev.ID] = anchorOn(t, get(t, st, ev.ID), "stub").LeafIndex
		}
		assertReceiptsMatchLeaves(t, st, "stub", evs)

		retried, err := st.RetryEvidence(ctx, evs[2].ID)
		require.NoError(t, err)
		assert.Equal(t, store.StatusPending, retried.Status)
		for _, ev := range evs {
			if ev.ID == evs[2].ID {
				continue
			}
			got := get(t, st, ev.ID)
			assert.Equal(t, store.StatusDeadLetter, got.Status)
			assert.Equal(t, before[ev.ID], anchorOn(t, got, "stub").LeafIndex, "evidence %s keeps its leaf", ev.ID)
		}
		later := insert(t, st, store.NewEvidence{Digest: digestOf("later"), Chains: []string{"stub"}, Priority: 5})
		again := formOne(t, st, "stub", 100)
		assert.Equal(t, 1, again.Size, "the re-driven anchor alone, first")
		assert.Equal(t, again.ID, anchorOn(t, get(t, st, evs[2].ID), "stub").BatchID)
		next := formOne(t, st, "stub", 100)
		assert.Equal(t, 1, next.Size, "then the lane, without the re-driven evidence")
		assert.Equal(t, next.ID, anchorOn(t, get(t, st, later.ID), "stub").BatchID)
		_, ok, err := st.FormBatch(ctx, "stub", 100)
		require.NoError(t, err)
		assert.False(t, ok)

		dry, err := st.DeadLetters(ctx, store.RedriveFilter{BatchID: dead.ID})
		require.NoError(t, err)
		assert.Equal(t, 5, dry.Anchors)
		res, err := st.Redrive(ctx, store.RedriveFilter{})
		require.NoError(t, err)
		assert.Equal(t, 5, res.Anchors)
		rest := formOne(t, st, "stub", 100)
		assert.Equal(t, 5, rest.Size)
		_, ok, err = st.FormBatch(ctx, "stub", 100)
		require.NoError(t, err)
		assert.False(t, ok, "each anchor was re-driven once")
		byBatch := assertReceiptsMatchLeaves(t, st, "stub", append(evs, later))
		assert.Equal(t, map[int64]int{again.ID: 1, next.ID: 1, rest.ID: 5}, map[int64]int{
			again.ID: len(byBatch[again.ID]), next.ID: len(byBatch[next.ID]), rest.ID: len(byBatch[rest.ID])})
	})
}

// Archiving part of a batch formed from the lanes keeps the leaves (and so
// the receipts) of the evidence it keeps; archiving the rest removes it.
func TestArchivingPartOfALaneBatchKeepsTheOthersLeaves(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var evs []store.Evidence
		for i := range 5 {
			evs = append(evs, insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("archive", i)), Chains: []string{"stub"}, Priority: 5}))
		}
		cut := nextMillisecond(t)
		for i := range 3 {
			evs = append(evs, insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("young", i)), Chains: []string{"stub"}, Priority: 5}))
		}
		b := formOne(t, st, "stub", 100)
		require.NoError(t, st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0x1", Block: 1}))
		n, err := st.ArchiveConfirmed(ctx, cut, 100, func([]store.Evidence) (string, error) { return "a.jsonl", nil })
		require.NoError(t, err)
		assert.Equal(t, 5, n)
		for i, ev := range evs[5:] {
			a := anchorOn(t, get(t, st, ev.ID), "stub")
			assert.Equal(t, 5+i, a.LeafIndex, "evidence %s keeps its leaf", ev.ID)
			assert.Equal(t, 8, a.TreeSize)
		}
		n, err = st.ArchiveConfirmed(ctx, nextMillisecond(t), 100, func([]store.Evidence) (string, error) { return "b.jsonl", nil })
		require.NoError(t, err)
		assert.Equal(t, 3, n)
		_, err = st.GetBatch(ctx, b.ID)
		assert.ErrorIs(t, err, store.ErrNotFound, "the batch goes with its last evidence")
	})
}

// Batches formed before migration 15, with an outbox row per evidence,
// read as they did, and the lanes go on from where they were.
func TestBatchesFormedWithOutboxRowsBeforeSpansStillRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		where := b.Fresh(t)
		old, err := store.OpenAtVersion(ctx, where, 14)
		require.NoError(t, err)
		var evs []store.Evidence
		for i := range 4 {
			ev, _, err := old.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("before", i)), Chains: []string{"eth", "stub"}, Priority: 5})
			require.NoError(t, err)
			evs = append(evs, ev)
		}
		// What claimLanes wrote before migration 15: a batch of the first
		// three on eth, with their rows, and the cursor past them.
		require.NoError(t, store.Exec(ctx, old, `INSERT INTO batches (id, chain, size, priority, state, created_at, updated_at) VALUES (1, 'eth', 3, 5, 'submitted', 1, 1)`))
		require.NoError(t, store.Exec(ctx, old, `INSERT INTO outbox (evidence_seq, chain, priority, batch_id, leaf_index)
				SELECT seq, 'eth', priority, 1, ROW_NUMBER() OVER (ORDER BY seq) - 1 FROM evidence WHERE id IN (?, ?, ?)`, evs[0].ID, evs[1].ID, evs[2].ID))
		require.NoError(t, store.Exec(ctx, old, `UPDATE anchor_cursors SET seq = (SELECT seq FROM evidence WHERE id = ?) WHERE chain = 'eth'`, evs[2].ID))
		if b.Name == "postgres" {
			require.NoError(t, store.Exec(ctx, old, `SELECT setval(pg_get_serial_sequence('batches', 'id'), 1)`))
		}
		require.NoError(t, old.Close())

		st := storetest.Open(t, where)
		assertReceiptsMatchLeaves(t, st, "eth", evs)
		for i, ev := range evs[:3] {
			a := anchorOn(t, get(t, st, ev.ID), "eth")
			assert.Equal(t, int64(1), a.BatchID)
			assert.Equal(t, i, a.LeafIndex)
			assert.Equal(t, store.StatusSubmitted, a.Status)
		}
		assert.Len(t, listAll(t, st, store.StatusPending), 4, "each waits on stub")

		nb := formOne(t, st, "eth", 10)
		assert.Equal(t, 1, nb.Size, "the lane goes on after the old batch")
		assert.Equal(t, nb.ID, anchorOn(t, get(t, st, evs[3].ID), "eth").BatchID)
		stub := formOne(t, st, "stub", 10)
		assert.Equal(t, 4, stub.Size)
		require.NoError(t, st.MarkSubmitted(ctx, stub.ID, [32]byte{1}, "stub:1"))
		assert.Equal(t, []string{evs[0].ID, evs[1].ID, evs[2].ID}, ids(listAll(t, st, store.StatusSubmitted)))
		assert.Equal(t, []string{evs[3].ID}, ids(listAll(t, st, store.StatusBatched)))
		assertReceiptsMatchLeaves(t, st, "eth", evs)
		assertReceiptsMatchLeaves(t, st, "stub", evs)
		require.NoError(t, st.DeadLetterBatch(ctx, 1, "eth: gone"))
		res, err := st.Redrive(ctx, store.RedriveFilter{BatchID: 1})
		require.NoError(t, err)
		assert.Equal(t, 3, res.Anchors)
	})
}
