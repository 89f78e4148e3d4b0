package solana

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/receipt"
)

// guardedLog is a worker's evidence log on a SQLite store, its lost-store
// guard reading keeper's latest anchor back from the devnet through a
// Solana adapter, as a worker's start does (internal/node/log.go).
type guardedLog struct {
	t      *testing.T
	path   string
	url    string
	payer  []byte
	signer *evlog.Signer
	st     *store.Store
	seq    *logsvc.Sequencer
	a      *Adapter
	j      *chaintest.Journal
	batch  int64
}

// start opens the store and starts the log as a restarted worker: a new
// adapter and sequencer, whose first round reads the chain's anchor back.
func (g *guardedLog) start() {
	t := g.t
	st := storetest.Open(t, g.path)
	g.st = st
	g.a = newAdapter(t, g.url, g.payer)
	g.seq = &logsvc.Sequencer{Store: st, Signer: g.signer, Interval: time.Second, Anchored: g.a.LatestCheckpoints,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	g.seq.Step(context.Background())
}

// stop closes the store, as a stopped worker leaves it.
func (g *guardedLog) stop() { require.NoError(g.t, g.st.Close()) }

// takeIn stores n evidence and signs the log's next checkpoint, which must
// succeed.
func (g *guardedLog) takeIn(n int) receipt.CheckpointRef {
	t := g.t
	nes := make([]store.NewEvidence, n)
	for i := range nes {
		_, err := rand.Read(nes[i].Digest[:])
		require.NoError(t, err)
		nes[i].Chains, nes[i].Priority = []string{Name}, 5
	}
	ins, err := g.st.InsertEvidenceBatch(context.Background(), nes)
	require.NoError(t, err)
	for _, in := range ins {
		require.NoError(t, in.Err)
	}
	c, err := g.seq.Sync(context.Background())
	require.NoError(t, err, "the log signs")
	return receipt.CheckpointRef{KeyHash: g.signer.Key().Hash, Size: c.Size, Root: c.Root}
}

// anchor anchors c on chain with the payer and waits until it is final.
func (g *guardedLog) anchor(c receipt.CheckpointRef) {
	g.batch++
	anchorCheckpoint(g.t, g.a, g.j, g.batch, c)
}

// copyStore copies the closed SQLite store at from (and any file beside it
// that SQLite keeps) to to: a backup.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	matches, err := filepath.Glob(from + "*")
	require.NoError(t, err)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to+strings.TrimPrefix(m, from), b, 0o600))
	}
}

// TestAWorkerRestartedAfterDustToItsPayerSignsOnAndAnOlderBackupIsStillRefused:
// a third party sends keeper's fee payer a transfer whose memo claims a
// checkpoint of a billion entries of keeper's log, and then 200 such
// transactions. After each, a worker restarted on its store signs on and
// anchors, and a store rewound to an older backup is still refused:
// keeper's own anchor of the bigger tree is found behind the dust.
func TestAWorkerRestartedAfterDustToItsPayerSignsOnAndAnOlderBackupIsStillRefused(t *testing.T) {
	chain, payer := startDevnet(t, 20*time.Millisecond) // a blockhash lives 150 slots: 3 s, time enough for a submit under the race detector
	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	dir := t.TempDir()
	g := &guardedLog{t: t, path: filepath.Join(dir, "keeper.db"), url: chain.URL(), payer: payer, signer: signer, j: chaintest.NewJournal()}
	attacker, err := chain.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)
	key := signer.Key().Hash

	g.start()
	require.NoError(t, g.seq.Err())
	g.anchor(g.takeIn(5))
	g.stop()
	backup := filepath.Join(dir, "backup.db")
	copyStore(t, g.path, backup)

	g.start()
	g.anchor(g.takeIn(4))
	g.stop()

	sendDust(t, chain.URL(), attacker, payer.PublicKey(), []string{dustMemo(key, 1_000_000_000)})
	g.start()
	require.NoError(t, g.seq.Err(), "one dust memo stops nothing")
	c := g.takeIn(3)
	assert.Equal(t, uint64(12), c.Size)
	g.anchor(c)
	g.stop()

	memos := make([]string, 200)
	for i := range memos {
		memos[i] = dustMemo(key, 1_000_000_000+uint64(i))
	}
	sendDust(t, chain.URL(), attacker, payer.PublicKey(), memos)
	g.start()
	require.NoError(t, g.seq.Err(), "200 dust memos stop nothing")
	c = g.takeIn(2)
	assert.Equal(t, uint64(14), c.Size)
	g.anchor(c)
	g.stop()

	rewound := &guardedLog{t: t, path: backup, url: chain.URL(), payer: payer, signer: signer, j: chaintest.NewJournal()}
	rewound.start()
	require.ErrorIs(t, rewound.seq.Err(), logsvc.ErrInconsistent)
	assert.Contains(t, rewound.seq.Err().Error(), "a chain holds a checkpoint of 14 entries and this store's log has 5")
	_, err = rewound.seq.Sync(context.Background())
	assert.ErrorIs(t, err, logsvc.ErrInconsistent, "the rewound store signs nothing")
}
