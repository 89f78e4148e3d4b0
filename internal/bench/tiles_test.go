package bench

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestThePartialTilesAreTheRightEdgeAtBothLevels(t *testing.T) {
	assert.Equal(t, []evlog.Tile{{Level: 0, N: 70, Width: 16}, {Level: 1, N: 0, Width: 70}}, partialTiles(70*256+16))
	assert.Equal(t, []evlog.Tile{{Level: 1, N: 0, Width: 64}}, partialTiles(64*256), "a log of whole tiles has no partial level-0 tile")
	assert.Empty(t, partialTiles(256*256), "nor a level-1 tile when its level-0 tiles fill it")
}

// TestTheTilesPhaseReadsWholeTilesFromTheLogHandler serves a real store's
// log of 64 full tiles and a partial one through logsvc's handler and runs
// the phase against it: every read is a whole tile, and the report names
// the partial tiles it read.
func TestTheTilesPhaseReadsWholeTilesFromTheLogHandler(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := storetest.Open(t, node.StoreFile(dir))
	const n = tileMinEntries + 100
	for start := 0; start < n; start += 1000 {
		nes := make([]store.NewEvidence, min(1000, n-start))
		for i := range nes {
			_, err := rand.Read(nes[i].Digest[:])
			require.NoError(t, err)
			nes[i].Chains, nes[i].Priority = []string{"stub"}, 5
		}
		_, err := s.InsertEvidenceBatch(ctx, nes)
		require.NoError(t, err)
	}
	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	_, err = (&logsvc.Sequencer{Store: s, Signer: signer, Interval: time.Second, Logger: slog.New(slog.DiscardHandler)}).Sync(ctx)
	require.NoError(t, err)
	srv := httptest.NewServer(logsvc.Handler(s))
	defer srv.Close()

	st := &stack{cfg: config.Config{DataDir: dir}, store: s, apis: []string{strings.TrimPrefix(srv.URL, "http://")}}
	o := Options{TileClients: 2, TileFor: 300 * time.Millisecond}
	o.defaults()
	rep, err := tiles(ctx, o, st, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(n), rep.LogSize)
	assert.Equal(t, uint64(64), rep.FullTiles)
	assert.Equal(t, []string{"tile/0/064.p/100", "tile/1/000.p/64"}, rep.PartialTiles)
	assert.Positive(t, rep.Reads)
	assert.Zero(t, rep.Errors, "errors: %v", rep.ErrorsBy)
	assert.Equal(t, rep.Reads, rep.Latency.N)
}
