package logsvc_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
)

// BenchmarkTileReads reads random tiles of a 16,000-entry log on a real
// SQLite store through the handler, as many clients at once: full hash
// tiles and entry bundles (from the cache after their first read) and the
// right edge's partial tiles (from the store each time); "store" reads
// every tile from the store. The speed target is 5,000 tile reads a
// second; the tiles/s metric is the measured rate.
func BenchmarkTileReads(b *testing.B) {
	l := newTestLog(b)
	cp := l.grow(b, 16_000)
	b.Run("cached", func(b *testing.B) { benchTiles(b, logsvc.Handler(l.st), cp.Size) })
	b.Run("store", func(b *testing.B) { benchTiles(b, &logsvc.Server{Source: l.st, TileCache: -1}, cp.Size) })
}

func benchTiles(b *testing.B, h http.Handler, size uint64) {
	full := size / evlog.TileWidth
	var paths []string
	for n := range full {
		paths = append(paths,
			evlog.Tile{Level: 0, N: n}.Path(),
			evlog.Tile{Level: evlog.EntriesLevel, N: n}.Path())
	}
	w := int(size % evlog.TileWidth)
	paths = append(paths,
		evlog.Tile{Level: 0, N: full, Width: w}.Path(),
		evlog.Tile{Level: evlog.EntriesLevel, N: full, Width: w}.Path(),
		evlog.Tile{Level: 1, N: 0, Width: int(full)}.Path())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/log/"+paths[r.IntN(len(paths))], nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("%d: %s", rec.Code, rec.Body)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tiles/s")
}
