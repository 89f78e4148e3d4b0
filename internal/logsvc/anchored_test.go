package logsvc_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/receipt"
)

// TestTheLogSignsNothingThatDoesNotExtendAChainsCheckpoint: a worker whose
// store was lost, or restored from a backup older than what a chain holds,
// or holds another history of the same size, refuses to sign (Err says why,
// so /readyz fails and anchoring waits) rather than start a second history
// under the same key; the store the chain's checkpoint came from signs on,
// and a checkpoint of another key is none of this log's business.
func TestTheLogSignsNothingThatDoesNotExtendAChainsCheckpoint(t *testing.T) {
	ctx := context.Background()
	original := newTestLog(t)
	anchored := original.grow(t, 5)
	onChain := []receipt.CheckpointRef{{KeyHash: original.signer.Key().Hash, Size: anchored.Size, Root: anchored.Root}}
	chains := func(context.Context) ([]receipt.CheckpointRef, error) { return onChain, nil }

	// the same key over another store
	sequencer := func(st *store.Store) *logsvc.Sequencer {
		return &logsvc.Sequencer{Store: st, Signer: original.signer, Interval: time.Second, Anchored: chains,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	newStore := func(t *testing.T) *store.Store {
		st := storetest.SQLite(t)
		return st
	}

	t.Run("a lost store", func(t *testing.T) {
		st := newStore(t)
		q := sequencer(st)
		q.Step(ctx)
		require.ErrorIs(t, q.Err(), logsvc.ErrInconsistent)
		assert.Contains(t, q.Err().Error(), "a chain holds a checkpoint of 5 entries and this store's log has 0")
		_, err := st.LatestCheckpoint(ctx)
		assert.ErrorIs(t, err, store.ErrNotFound, "nothing was signed")
	})

	t.Run("an older backup that grew since", func(t *testing.T) {
		other := &testLog{st: newStore(t), signer: original.signer}
		other.seq = sequencer(other.st)
		other.add(t, 3) // three evidence, not the five the chain's checkpoint commits to
		other.seq.Step(ctx)
		require.ErrorIs(t, other.seq.Err(), logsvc.ErrInconsistent)
	})

	t.Run("another history of the same size", func(t *testing.T) {
		other := &testLog{st: newStore(t), signer: original.signer}
		other.seq = sequencer(other.st)
		other.add(t, 5)
		other.seq.Step(ctx)
		require.ErrorIs(t, other.seq.Err(), logsvc.ErrInconsistent)
		assert.Contains(t, other.seq.Err().Error(), "the chain's checkpoint of 5 entries has root")
		_, err := other.st.LatestCheckpoint(ctx)
		assert.ErrorIs(t, err, store.ErrNotFound, "nothing was signed")
	})

	t.Run("the store the checkpoint came from", func(t *testing.T) {
		q := sequencer(original.st)
		original.add(t, 2)
		c, err := q.Sync(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), c.Size, "it extends the chain's checkpoint and signs on")
	})

	t.Run("a checkpoint of another key", func(t *testing.T) {
		onChain = []receipt.CheckpointRef{{KeyHash: original.signer.Key().Hash + 1, Size: 1000, Root: anchored.Root}}
		other := &testLog{st: newStore(t), signer: original.signer}
		other.seq = sequencer(other.st)
		other.add(t, 1)
		c, err := other.seq.Sync(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), c.Size)
	})
}
