package witness

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
)

// A cosignature is answered only after its state is on disk: the file is
// in WAL mode and every commit is synced (synchronous FULL), so a SIGKILL
// or a power cut after the answer loses nothing.
func TestTheStateFileSyncsEveryCommit(t *testing.T) {
	signer, err := evlog.NewWitness("witness.example/w1", make([]byte, ed25519.SeedSize))
	require.NoError(t, err)
	w, err := Open(context.Background(), Config{DB: filepath.Join(t.TempDir(), "witness.db"), Signer: signer})
	require.NoError(t, err)
	defer w.Close()
	var mode string
	var sync int
	require.NoError(t, w.store.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.NoError(t, w.store.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, 2, sync, "FULL")
}
