package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The writer's commits never checkpoint the write-ahead log (so an intake
// commit never waits for the copy); the checkpointer copies it back into the
// database file on its own connection once it passes walCheckpointBytes.
func TestTheWriteAheadLogIsCheckpointedBesideTheWriterNotByItsCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keeper.db")
	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer func() {
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "a store closed twice")
	}()

	var auto int
	require.NoError(t, s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto))
	require.Zero(t, auto, "the writer's commits do not checkpoint")

	require.NoError(t, s.exec(ctx, `CREATE TABLE filler (b BLOB)`))
	before, err := os.Stat(path)
	require.NoError(t, err)
	blob := make([]byte, 64<<10)
	for range 2 * walCheckpointBytes / len(blob) {
		require.NoError(t, s.exec(ctx, `INSERT INTO filler (b) VALUES (?)`, blob))
	}
	require.Eventually(t, func() bool {
		fi, err := os.Stat(path)
		return err == nil && fi.Size() >= before.Size()+walCheckpointBytes
	}, 10*time.Second, 20*time.Millisecond, "the log's pages reach the database file without a commit checkpointing them")
}
