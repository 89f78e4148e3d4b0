package logsvc_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

const testOrigin = "keeper.test/log"

// testLog is a log on a real SQLite store, signed by its own key.
type testLog struct {
	st     *store.Store
	signer *evlog.Signer
	seq    *logsvc.Sequencer
}

func newTestLog(t testing.TB) *testLog {
	t.Helper()
	st := storetest.SQLite(t)
	skey, _, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, testOrigin)
	require.NoError(t, err)
	return &testLog{st: st, signer: signer, seq: &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

// add stores n evidence for the stub chain without taking them into the log.
func (l *testLog) add(t testing.TB, n int) {
	t.Helper()
	for start := 0; start < n; start += 1000 {
		nes := make([]store.NewEvidence, min(1000, n-start))
		for i := range nes {
			_, err := rand.Read(nes[i].Digest[:])
			require.NoError(t, err)
			nes[i].Chains, nes[i].Priority = []string{"stub"}, 5
		}
		ins, err := l.st.InsertEvidenceBatch(context.Background(), nes)
		require.NoError(t, err)
		for _, in := range ins {
			require.NoError(t, in.Err)
		}
	}
}

// grow adds n evidence, takes them into the log and signs a checkpoint.
func (l *testLog) grow(t testing.TB, n int) store.LogCheckpoint {
	t.Helper()
	l.add(t, n)
	c, err := l.seq.Sync(context.Background())
	require.NoError(t, err)
	return c
}

// anchor records a confirmed anchor of the checkpoint of size on chain,
// as a confirmed AnchorBatch would (the evidence waiting forms its batch).
func (l *testLog) anchor(t testing.TB, size uint64, c store.Confirmation) {
	t.Helper()
	ctx := context.Background()
	b, ok, err := l.st.FormBatch(ctx, "stub", 100_000)
	require.NoError(t, err)
	require.True(t, ok, "no evidence waits for a batch")
	_, err = l.st.BatchCheckpoint(ctx, b.ID, size)
	require.NoError(t, err)
	cp, err := l.st.CheckpointAt(ctx, size)
	require.NoError(t, err)
	require.NoError(t, l.st.MarkSubmitted(ctx, b.ID, cp.Root, c.TxRef))
	require.NoError(t, l.st.ConfirmBatch(ctx, b.ID, c))
}
