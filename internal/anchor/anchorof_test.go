package anchor

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// TestABatchJournaledBeforeTheLogKeepsItsOwnRootAndANewOneCommitsToACheckpoint:
// after an upgrade, a batch whose first transaction was journaled before
// the evidence log existed is rebroadcast with the root it was signed with
// (its receipts stay version 2), while a batch formed since commits to a
// checkpoint of the log that holds its evidence, fixed by its first submit.
func TestABatchJournaledBeforeTheLogKeepsItsOwnRootAndANewOneCommitsToACheckpoint(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	batch := func() int64 { return formBatch(t, st, "stub") }

	old := batch()
	require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: old, Chain: "stub", Ref: "0x01", Raw: []byte{1}, CreatedAt: time.Now()}))
	fresh := batch()

	log := newSequencer(t, st)
	signer := log.Signer
	a := &Activities{Store: st, Log: log}

	an, err := a.anchorOf(ctx, old)
	require.NoError(t, err)
	assert.Nil(t, an.Checkpoint, "a batch journaled before the log anchors its own root")
	tree, err := a.tree(ctx, old)
	require.NoError(t, err)
	assert.Equal(t, [32]byte(tree.Root()), an.Root)
	size, err := st.BatchLogSize(ctx, old)
	require.NoError(t, err)
	assert.Zero(t, size)

	an, err = a.anchorOf(ctx, fresh)
	require.NoError(t, err)
	require.NotNil(t, an.Checkpoint, "a batch formed with the log commits to a checkpoint")
	assert.Equal(t, uint64(2), an.Checkpoint.Size, "the checkpoint holds the batch's evidence, second in intake order")
	assert.Equal(t, signer.Key().Hash, an.Checkpoint.KeyHash)
	cp, err := st.CheckpointAt(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, cp.Root, an.Root)

	batch() // the log grows; a rebroadcast of the fresh batch carries what its first submit fixed
	_, err = log.Sync(ctx)
	require.NoError(t, err)
	again, err := a.anchorOf(ctx, fresh)
	require.NoError(t, err)
	assert.Equal(t, an, again)
}

// openStore opens a fresh SQLite store, closed when the test ends.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st := storetest.SQLite(t)
	return st
}

// formBatch stores one evidence for chain and forms the batch that takes it.
func formBatch(t *testing.T, st *store.Store, chain string) int64 {
	t.Helper()
	ctx := context.Background()
	var ne store.NewEvidence
	_, err := rand.Read(ne.Digest[:])
	require.NoError(t, err)
	ne.Chains, ne.Priority = []string{chain}, 5
	ins, err := st.InsertEvidenceBatch(ctx, []store.NewEvidence{ne})
	require.NoError(t, err)
	require.NoError(t, ins[0].Err)
	b, ok, err := st.FormBatch(ctx, chain, 100)
	require.NoError(t, err)
	require.True(t, ok)
	return b.ID
}

// newSequencer is the evidence log over st, signed with a fresh key.
func newSequencer(t *testing.T, st *store.Store) *logsvc.Sequencer {
	t.Helper()
	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	return &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// countedLog is the evidence log, counting the calls anchoring makes to it.
type countedLog struct {
	LogCheckpoints
	calls int
}

func (l *countedLog) PinBatch(ctx context.Context, batchID int64) (store.LogCheckpoint, error) {
	l.calls++
	return l.LogCheckpoints.PinBatch(ctx, batchID)
}

func (l *countedLog) CheckpointFor(ctx context.Context, need uint64) (store.LogCheckpoint, error) {
	l.calls++
	return l.LogCheckpoints.CheckpointFor(ctx, need)
}

// leavesOnly is a store that answers a batch's leaves and nothing else:
// any other call panics on the nil Batches it embeds.
type leavesOnly struct {
	Batches
	st     *store.Store
	leaves int
}

func (s *leavesOnly) BatchLeaves(ctx context.Context, id int64) ([][]byte, error) {
	s.leaves++
	return s.st.BatchLeaves(ctx, id)
}

// What a batch's anchor carries takes one call to the log, fresh or
// pinned, and nothing from the store; a batch journaled before the log,
// or a worker without one, reads the batch's leaves for its root.
func TestAnAnchorTakesOneCallToTheLogAndNoneToTheStore(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	old := formBatch(t, st, "stub")
	require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: old, Chain: "stub", Ref: "0x01", Raw: []byte{1}, CreatedAt: time.Now()}))
	fresh := formBatch(t, st, "stub")
	log := &countedLog{LogCheckpoints: newSequencer(t, st)}
	reads := &leavesOnly{st: st}
	a := &Activities{Store: reads, Log: log}

	first, err := a.anchorOf(ctx, fresh)
	require.NoError(t, err)
	require.NotNil(t, first.Checkpoint)
	assert.Equal(t, 1, log.calls, "a fresh batch")
	again, err := a.anchorOf(ctx, fresh)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, 2, log.calls, "a pinned batch")
	assert.Zero(t, reads.leaves)

	an, err := a.anchorOf(ctx, old)
	require.NoError(t, err)
	assert.Nil(t, an.Checkpoint)
	assert.Equal(t, 3, log.calls, "a batch journaled before the log")
	assert.Equal(t, 1, reads.leaves)

	a.Log = nil
	an, err = a.anchorOf(ctx, fresh)
	require.NoError(t, err)
	assert.Nil(t, an.Checkpoint, "a worker without the log anchors roots")
	assert.Equal(t, 2, reads.leaves)
}

// A batch left with no evidence (its anchors re-driven into another) fails
// its submit for good: no retry gives it evidence to anchor.
func TestAnEmptyBatchFailsPermanently(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	b := formBatch(t, st, "stub")
	require.NoError(t, st.DeadLetterBatch(ctx, b, "stub down"))
	_, err := st.Redrive(ctx, store.RedriveFilter{BatchID: b})
	require.NoError(t, err)
	a := &Activities{Store: st, Log: newSequencer(t, st)}
	_, err = a.anchorOf(ctx, b)
	require.ErrorIs(t, err, store.ErrEmptyBatch)
	assert.True(t, retry.IsPermanent(err))
}
