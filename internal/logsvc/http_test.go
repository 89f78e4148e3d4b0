package logsvc_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tlogfmt "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
)

// get fetches url and returns the answer with its body read.
func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// httpTiles is a tlog.TileReader over a tlog-tiles server. Its paths come
// from x/mod's own tlog.Tile.Path ("tile/8/0/x001/234.p/5"), less the
// height element the C2SP layout leaves out, so the server's path encoding
// is checked against code keeper does not own.
type httpTiles struct {
	t    *testing.T
	base string // ends in /log/
}

func (r httpTiles) Height() int { return 8 }

func (r httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		resp, b := get(r.t, r.base+strings.Replace(tile.Path(), "tile/8/", "tile/", 1))
		require.Equal(r.t, http.StatusOK, resp.StatusCode, "%s: %s", tile.Path(), b)
		out[i] = b
	}
	return out, nil
}

func (httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// openCheckpoint parses and verifies a checkpoint with formats/log and
// x/mod's note, as any C2SP client would.
func openCheckpoint(t *testing.T, signed []byte, vkey string) tlog.Tree {
	t.Helper()
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	require.NoError(t, err)
	cp, _, n, err := tlogfmt.ParseCheckpoint(signed, testOrigin, v)
	require.NoError(t, err)
	require.Len(t, n.Sigs, 1)
	var root tlog.Hash
	copy(root[:], cp.Hash)
	return tlog.Tree{N: int64(cp.Size), Hash: root}
}

// entryAt reads entry i from the served entry bundles.
func entryAt(t *testing.T, base string, size, i int64) []byte {
	t.Helper()
	n := i / 256
	w := min(size-n*256, 256)
	tile := tlog.Tile{H: 8, L: 0, N: n, W: int(w)}
	resp, b := get(t, base+strings.Replace(tile.Path(), "tile/8/0/", "tile/entries/", 1))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Len(t, b, int(w)*34)
	off := (i % 256) * 34
	require.Equal(t, []byte{0, 32}, b[off:off+2])
	return b[off+2 : off+34]
}

func TestTheLogsServedTilesProveInclusionAndConsistencyWithTlog(t *testing.T) {
	l := newTestLog(t)
	srv := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(srv.Close)
	base := srv.URL + "/log/"

	l.grow(t, 300)
	resp, keyText := get(t, base+"key")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, l.signer.Key().Text+"\n", string(keyText))
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	_, signed := get(t, base+"checkpoint")
	old := openCheckpoint(t, signed, string(keyText))
	require.EqualValues(t, 300, old.N)

	l.grow(t, 500)
	resp, signed = get(t, base+"checkpoint")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "public, max-age=1", resp.Header.Get("Cache-Control"))
	tree := openCheckpoint(t, signed, string(keyText))
	require.EqualValues(t, 800, tree.N)

	hr := tlog.TileHashReader(tree, httpTiles{t: t, base: base})
	for _, i := range []int64{0, 1, 255, 256, 299, 511, 512, 799} {
		leaf := tlog.RecordHash(entryAt(t, base, tree.N, i))
		p, err := tlog.ProveRecord(tree.N, i, hr)
		require.NoError(t, err, "entry %d", i)
		require.NoError(t, tlog.CheckRecord(p, tree.N, tree.Hash, i, leaf), "entry %d", i)
	}
	p, err := tlog.ProveTree(tree.N, old.N, hr)
	require.NoError(t, err)
	require.NoError(t, tlog.CheckTree(p, tree.N, tree.Hash, old.N, old.Hash))

	// The entries the log holds are the evidence's salted commitments.
	evs, _, err := l.st.ListEvidence(context.Background(), store.ListFilter{Limit: 1000})
	require.NoError(t, err)
	want := map[[32]byte]bool{}
	for _, ev := range evs {
		want[evlog.EntryOf(ev.Salt, ev.Digest)] = true
	}
	assert.True(t, want[[32]byte(entryAt(t, base, tree.N, 42))])
}

func TestLogTilesAreServedOnlyWithinTheLatestCheckpointWithTheirCacheHeaders(t *testing.T) {
	l := newTestLog(t)
	srv := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(srv.Close)
	base := srv.URL + "/log/"

	resp, _ := get(t, base+"checkpoint")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no checkpoint yet")
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	resp, _ = get(t, base+"key")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = get(t, base+"tile/0/000.p/1")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	l.grow(t, 300)
	l.add(t, 300)
	_, _, _, err := l.st.AppendLog(context.Background(), 1000) // in the log, not yet in a checkpoint
	require.NoError(t, err)

	for _, c := range []struct {
		path  string
		code  int
		cache string
		size  int
	}{
		{"tile/0/000", 200, "public, max-age=31536000, immutable", 256 * 32},
		{"tile/entries/000", 200, "public, max-age=31536000, immutable", 256 * 34},
		{"tile/0/001.p/44", 200, "public, max-age=60", 44 * 32},
		{"tile/entries/001.p/44", 200, "public, max-age=60", 44 * 34},
		{"tile/0/000.p/7", 200, "public, max-age=60", 7 * 32}, // a partial tile whose full tile exists
		{"tile/1/000.p/1", 200, "public, max-age=60", 32},
		{"tile/0/001.p/45", 404, "", 0}, // stored, but no checkpoint covers it
		{"tile/0/001", 404, "", 0},
		{"tile/entries/001", 404, "", 0},
		{"tile/1/000.p/2", 404, "", 0},
		{"tile/2/000.p/1", 404, "", 0},
		{"tile/63/000.p/1", 404, "", 0},
		{"tile/0/x018/x446/x744/x073/x709/x551/615", 404, "", 0},
	} {
		resp, b := get(t, base+c.path)
		require.Equal(t, c.code, resp.StatusCode, "%s: %s", c.path, b)
		if c.code != 200 {
			assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), c.path)
			continue
		}
		assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"), c.path)
		assert.Equal(t, c.cache, resp.Header.Get("Cache-Control"), c.path)
		assert.Len(t, b, c.size, c.path)
	}
	_, full := get(t, base+"tile/0/000")
	_, part := get(t, base+"tile/0/000.p/7")
	assert.Equal(t, full[:7*32], part)

	for _, bad := range []string{"tile/0/1", "tile/0/000.p/0", "tile/0/000.p/256", "tile/x/000", "tile/0/x000/001"} {
		resp, b := get(t, base+bad)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		var p struct{ Code, Field string }
		require.NoError(t, json.Unmarshal(b, &p))
		assert.Equal(t, "invalid_tile_path", p.Code, bad)
	}
	resp, _ = get(t, base+"nothing")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Post(base+"checkpoint", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestTheLogServesPastCheckpointsAndAnchorsForMonitors(t *testing.T) {
	l := newTestLog(t)
	srv := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(srv.Close)
	base := srv.URL + "/log/"

	first := l.grow(t, 5)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l.anchor(t, 5, store.Confirmation{TxRef: "0xabc", Block: 7, BlockTime: at, Network: "eip155:42793", BlockHash: "0xb10c",
		Finality: "finalized", Account: "0x00000000000000000000000000000000000000aa"})
	l.grow(t, 3)

	resp, b := get(t, base+"checkpoints/5")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, first.Note, b)
	assert.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
	c, err := l.signer.Key().Open(b)
	require.NoError(t, err)
	assert.EqualValues(t, 5, c.Size)

	resp, _ = get(t, base+"checkpoints/6")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = get(t, base+"checkpoints/05")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	for _, path := range []string{"anchors", "anchors.json"} {
		resp, b = get(t, base+path)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var as []evlog.Anchor
		require.NoError(t, json.Unmarshal(b, &as))
		assert.Equal(t, []evlog.Anchor{{Chain: "stub", Network: "eip155:42793", Account: "0x00000000000000000000000000000000000000aa",
			TxRef: "0xabc", Block: 7, BlockHash: "0xb10c", BlockTime: at, Finality: "finalized", Size: 5}}, as)
	}
}

func TestALogTileIsTheSameFromTheCacheAsFromTheStore(t *testing.T) {
	l := newTestLog(t)
	cached := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(cached.Close)
	uncached := httptest.NewServer(&logsvc.Server{Source: l.st, TileCache: -1})
	t.Cleanup(uncached.Close)
	l.grow(t, 600)
	for range 2 {
		for _, p := range []string{"tile/0/000", "tile/0/001", "tile/entries/001", "tile/0/002.p/88"} {
			_, a := get(t, cached.URL+"/log/"+p)
			_, b := get(t, uncached.URL+"/log/"+p)
			require.Equal(t, sha256.Sum256(b), sha256.Sum256(a), p)
		}
	}
}
