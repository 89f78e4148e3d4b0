package logsvc_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/receipt"
)

// TestTwoSequencersOverOneStorePinEveryBatchToOneCheckpointThatHoldsIt:
// two workers, each with its own connections to one store and the
// deployment's one key, pin the same batches at once while evidence keeps
// arriving and one of them syncs: each batch gets one checkpoint, the same
// from both, holding its evidence, signed by the key over the log's root.
func TestTwoSequencersOverOneStorePinEveryBatchToOneCheckpointThatHoldsIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		signer := newTestLog(t).signer
		var workers [2]*testLog
		for i := range workers {
			st := storetest.Open(t, where)
			workers[i] = &testLog{st: st, signer: signer, seq: &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
		}
		const rounds = 12
		var (
			batches []int64
			pinned  [2]map[int64]store.LogCheckpoint
			wg      sync.WaitGroup
		)
		for i := range pinned {
			pinned[i] = map[int64]store.LogCheckpoint{}
		}
		for range rounds {
			workers[0].add(t, 5)
			b, ok, err := workers[0].st.FormBatch(ctx, "stub", 3) // some evidence left waiting each round
			require.NoError(t, err)
			require.True(t, ok)
			batches = append(batches, b.ID)
			for i, w := range workers {
				wg.Go(func() {
					c, err := w.seq.PinBatch(ctx, b.ID)
					if assert.NoError(t, err, "worker %d, batch %d", i, b.ID) {
						pinned[i][b.ID] = c
					}
				})
			}
			wg.Go(func() {
				_, err := workers[1].seq.Sync(ctx)
				assert.NoError(t, err)
			})
			wg.Wait()
		}
		for _, id := range batches {
			c := pinned[0][id]
			assert.Equal(t, c, pinned[1][id], "batch %d", id)
			size, err := workers[1].st.BatchLogSize(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, c.Size, size, "batch %d", id)
			need, missing, err := workers[0].st.BatchLogSpan(ctx, id)
			require.NoError(t, err)
			assert.Zero(t, missing)
			assert.LessOrEqual(t, need, c.Size, "the checkpoint of batch %d holds its evidence", id)
			opened, err := signer.Key().Open(c.Note)
			require.NoError(t, err)
			root, err := tlog.TreeHash(int64(c.Size), workers[0].st.LogHashReader(ctx))
			require.NoError(t, err)
			assert.Equal(t, evlog.Checkpoint{Origin: testOrigin, Size: c.Size, Root: root}, opened)
		}
		last, err := workers[0].seq.Sync(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 5*rounds, last.Size, "every evidence in the log once")
	})
}

// A batch whose evidence is past the end of the log by more than one
// append takes in is pinned all the same: the log takes the backlog in by
// parts first, as Sync does.
func TestPinningABatchBehindALongBacklogTakesTheBacklogInFirst(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	l.add(t, logsvc.DefaultAppendMax+10)
	b, ok, err := l.st.FormBatch(ctx, "stub", logsvc.DefaultAppendMax+10)
	require.NoError(t, err)
	require.True(t, ok)
	c, err := l.seq.PinBatch(ctx, b.ID)
	require.NoError(t, err)
	assert.EqualValues(t, logsvc.DefaultAppendMax+10, c.Size)
}

// The log pins no batch to a checkpoint it signs before it knows its tree
// extends what the chains hold; a batch pinned already gets its
// checkpoint back whatever the chains answer, and one whose evidence the
// latest checkpoint holds is pinned to it without signing.
func TestPinningABatchSignsOnlyWhatExtendsTheChainsCheckpoints(t *testing.T) {
	ctx := context.Background()
	original := newTestLog(t)
	anchored := original.grow(t, 5)
	onChain := []receipt.CheckpointRef{{KeyHash: original.signer.Key().Hash, Size: anchored.Size, Root: anchored.Root}}
	var chainsDown error
	sequencer := func(st *store.Store) *logsvc.Sequencer {
		return &logsvc.Sequencer{Store: st, Signer: original.signer, Interval: time.Second,
			Anchored: func(context.Context) ([]receipt.CheckpointRef, error) { return onChain, chainsDown },
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	batch := func(l *testLog) int64 {
		b, ok, err := l.st.FormBatch(ctx, "stub", 100)
		require.NoError(t, err)
		require.True(t, ok)
		return b.ID
	}

	lost := &testLog{st: storetest.SQLite(t), signer: original.signer}
	lost.add(t, 3)
	_, err := sequencer(lost.st).PinBatch(ctx, batch(lost))
	require.ErrorIs(t, err, logsvc.ErrInconsistent)
	_, err = lost.st.LatestCheckpoint(ctx)
	assert.ErrorIs(t, err, store.ErrNotFound, "nothing was signed")

	original.add(t, 2)
	pinned := batch(original)
	c, err := sequencer(original.st).PinBatch(ctx, pinned)
	require.NoError(t, err)
	assert.EqualValues(t, 7, c.Size)

	chainsDown = errors.New("no chain answers")
	q := sequencer(original.st)
	again, err := q.PinBatch(ctx, pinned)
	require.NoError(t, err)
	assert.Equal(t, c, again)
	original.add(t, 1)
	_, err = q.PinBatch(ctx, batch(original))
	require.ErrorContains(t, err, "no chain answers")
	latest, err := original.st.LatestCheckpoint(ctx)
	require.NoError(t, err)
	assert.Equal(t, c, latest, "nothing signed while the chains cannot be read")
}

// pinRefused is the store with its pinning transaction refused: a
// sequencer that reaches it for a batch pinned already waited on its lock
// and opened a transaction for nothing.
type pinRefused struct{ *store.Store }

func (pinRefused) PinBatch(context.Context, int64, int, string, store.SignCheckpoint) (store.LogCheckpoint, error) {
	return store.LogCheckpoint{}, errors.New("the pinning transaction was opened")
}

// A batch pinned already (every rebroadcast of it) is answered by a read:
// no pinning transaction, and no wait behind the sequencer's appends.
func TestAPinnedBatchIsAnsweredByAReadWithoutThePinningTransaction(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	l.add(t, 3)
	b, ok, err := l.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	pinned, err := l.seq.PinBatch(ctx, b.ID)
	require.NoError(t, err)

	reader := &logsvc.Sequencer{Store: pinRefused{l.st}, Signer: l.signer, Interval: time.Second, Logger: l.seq.Logger}
	again, err := reader.PinBatch(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, pinned.Size, again.Size)
	assert.Equal(t, pinned.Note, again.Note)

	l.add(t, 2)
	fresh, ok, err := l.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = reader.PinBatch(ctx, fresh.ID)
	assert.Error(t, err, "a batch not pinned yet needs the transaction")
}
