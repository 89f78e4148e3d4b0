package bench

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// TestTheLogReportTimesEachEvidenceToTheFirstCheckpointHoldingIt stores
// 300 evidence in a real SQLite store, takes them into the log 100 at a
// time and signs a checkpoint after each append at a chosen time; the
// report must give each evidence the time of the first checkpoint larger
// than its index, and the log's tables a plausible size per entry.
func TestTheLogReportTimesEachEvidenceToTheFirstCheckpointHoldingIt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := storetest.Open(t, node.StoreFile(dir))
	st := &stack{cfg: config.Config{DataDir: dir}, store: s}
	st.cfg.Log.CheckpointInterval = time.Second
	defer func() {
		for _, f := range st.cleanup {
			f()
		}
	}()

	lp, err := startLogPhase(ctx, st)
	require.NoError(t, err)
	nes := make([]store.NewEvidence, 300)
	for i := range nes {
		_, err := rand.Read(nes[i].Digest[:])
		require.NoError(t, err)
		nes[i].Chains, nes[i].Priority = []string{"stub"}, 5
	}
	ins, err := s.InsertEvidenceBatch(ctx, nes)
	require.NoError(t, err)
	for _, in := range ins {
		require.NoError(t, in.Err)
	}
	upto, err := s.LastSeq(ctx)
	require.NoError(t, err)
	evs, err := s.EvidenceTimings(ctx, 0, upto)
	require.NoError(t, err)
	require.Len(t, evs, 300)

	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	base := evs[len(evs)-1].CreatedAt
	// Checkpoints of 100, 200 and 300 entries signed 0.4, 1.2 and 0.9 s
	// after the last intake: the third, signed before the second, is the
	// first to hold indexes 100–199 too.
	at := []time.Duration{400 * time.Millisecond, 1200 * time.Millisecond, 900 * time.Millisecond}
	for _, d := range at {
		size, root, taken, err := s.AppendLog(ctx, 100)
		require.NoError(t, err)
		require.Equal(t, 100, taken)
		note, err := signer.Sign(evlog.Checkpoint{Origin: signer.Origin(), Size: size, Root: root})
		require.NoError(t, err)
		require.NoError(t, s.SaveCheckpoint(ctx, store.LogCheckpoint{Size: size, Root: root, Note: note, CreatedAt: base.Add(d)}, signer.Key().Text))
	}

	rep, err := lp.finish(ctx, window{0, upto})
	require.NoError(t, err)
	assert.Equal(t, 300, rep.Evidence)
	assert.Equal(t, 300, rep.InCheckpoint)
	assert.Equal(t, 2, rep.Checkpoints, "the checkpoint of 200, signed after the one of 300, held nothing first")
	assert.Equal(t, 1000.0, rep.CheckpointIntervalMS)
	want := make([]time.Duration, len(evs))
	for i, e := range evs {
		first := at[0]
		if i >= 100 {
			first = at[2]
		}
		want[i] = base.Add(first).Sub(e.CreatedAt)
	}
	assert.Equal(t, summarize(want), rep.IntakeToCheckpoint)
	// An entry is 32 bytes and adds about one stored hash of 32 bytes above
	// the leaves (a leaf's hash is read from its entry), kept in tiles of
	// 256 (SQLite's pages measure the growth, so a few hundred entries come
	// out a little under or over 64).
	assert.Greater(t, rep.BytesPerEvidence, 32.0)
	assert.Less(t, rep.BytesPerEvidence, 1000.0)
}

func TestEvidenceOutsideEveryCheckpointHasNoTime(t *testing.T) {
	cps := earliestCovering([]checkpointTime{{size: 10, at: 500}, {size: 20, at: 400}})
	at, ok := firstHolding(cps, 3)
	assert.True(t, ok)
	assert.Equal(t, int64(400), at, "the larger checkpoint, signed first, held index 3 first")
	at, ok = firstHolding(cps, 10)
	assert.True(t, ok)
	assert.Equal(t, int64(400), at)
	_, ok = firstHolding(cps, 20)
	assert.False(t, ok, "index 20 is in no checkpoint of 20 entries")
}
