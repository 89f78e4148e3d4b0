package evlog_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
)

// A mirror may keep only the full tile once the log grew past a partial
// one: the client cuts the partial tile it asks for from the full one.
func TestLogClientCutsAPartialTileFromItsFullTile(t *testing.T) {
	dir := t.TempDir()
	full := make([]byte, evlog.TileWidth*32)
	for i := range full {
		full[i] = byte(i / 32)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tile", "0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tile", "0", "000"), full, 0o644))
	srv := httptest.NewServer(http.StripPrefix("/log/", http.FileServer(http.Dir(dir))))
	t.Cleanup(srv.Close)

	for _, loc := range []string{dir, srv.URL + "/log"} {
		c, err := evlog.NewClient(loc, nil)
		require.NoError(t, err)
		b, err := c.Tile(context.Background(), evlog.Tile{Level: 0, N: 0, Width: 7})
		require.NoError(t, err, loc)
		assert.Equal(t, full, b, "the full tile is answered; readers take its first 7 hashes")
		_, err = c.Tile(context.Background(), evlog.Tile{Level: 0, N: 1, Width: 7})
		assert.True(t, errors.Is(err, evlog.ErrNotFound), "%s: %v", loc, err)
		_, err = c.Checkpoint(context.Background())
		assert.True(t, errors.Is(err, evlog.ErrNotFound), "%s: %v", loc, err)
	}
}

func TestLogClientReportsAServerErrorByItsStatusOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "secret upstream detail", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	c, err := evlog.NewClient(srv.URL+"/log/", nil)
	require.NoError(t, err)
	_, err = c.Checkpoint(context.Background())
	require.Error(t, err)
	assert.False(t, errors.Is(err, evlog.ErrNotFound))
	assert.Contains(t, err.Error(), "502 Bad Gateway")
	assert.NotContains(t, err.Error(), "secret")
}

func TestLogClientRefusesWhatIsNeitherAURLNorADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err := evlog.NewClient(f, nil)
	assert.ErrorContains(t, err, "is not a directory")
	_, err = evlog.NewClient("http://", nil)
	assert.ErrorContains(t, err, "is not a URL")
}
