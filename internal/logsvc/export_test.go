package logsvc_test

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
)

// fileServer serves dir under /log/ with the standard library's file server.
func fileServer(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.StripPrefix("/log/", http.FileServer(http.Dir(dir))))
	t.Cleanup(srv.Close)
	return srv.URL + "/log/"
}

func TestAnExportedDirectoryServedByAPlainFileServerIsTheSameLog(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	l.grow(t, 300)
	l.anchor(t, 300, store.Confirmation{TxRef: "0xabc", Block: 7, BlockTime: time.Now(), Network: "eip155:42793", Account: "0xaa"})
	latest := l.grow(t, 700)
	dir := t.TempDir()
	res, err := logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	assert.EqualValues(t, 1000, res.Size)

	base := fileServer(t, dir)
	served := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(served.Close)
	// Every file is what keeper serves at the same path.
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		assert.False(t, strings.HasPrefix(d.Name(), ".tmp-"), "a temporary file is left: %s", p)
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	}))
	assert.Contains(t, paths, "tile/0/003.p/232")
	assert.Contains(t, paths, "tile/entries/003.p/232")
	assert.Contains(t, paths, "tile/1/000.p/3")
	assert.Contains(t, paths, "checkpoints/300")
	assert.Contains(t, paths, "checkpoints/1000")
	for _, p := range paths {
		_, fromDir := get(t, base+p)
		path := p
		if p == evlog.AnchorsPath {
			path = "anchors"
		}
		_, fromKeeper := get(t, served.URL+"/log/"+path)
		assert.Equal(t, string(fromKeeper), string(fromDir), p)
	}

	// A C2SP client proves inclusion and consistency from the mirror.
	for _, loc := range []string{base, dir} {
		c, err := evlog.NewClient(loc, nil)
		require.NoError(t, err)
		key, err := c.Key(ctx)
		require.NoError(t, err)
		assert.Equal(t, l.signer.Key().Text, key.Text)
		signed, err := c.Checkpoint(ctx)
		require.NoError(t, err)
		cp, err := key.Open(signed)
		require.NoError(t, err)
		assert.Equal(t, latest.Root, cp.Root)
		old, err := c.CheckpointAt(ctx, 300)
		require.NoError(t, err)
		oldCp, err := key.Open(old)
		require.NoError(t, err)
		hr := c.HashReader(ctx, cp.Size, cp.Root)
		p, err := tlog.ProveTree(int64(cp.Size), int64(oldCp.Size), hr)
		require.NoError(t, err)
		require.NoError(t, tlog.CheckTree(p, int64(cp.Size), cp.Root, int64(oldCp.Size), oldCp.Root))
		entries, err := c.EntryBundle(ctx, 3, 232)
		require.NoError(t, err)
		rp, err := tlog.ProveRecord(int64(cp.Size), 999, hr)
		require.NoError(t, err)
		require.NoError(t, tlog.CheckRecord(rp, int64(cp.Size), cp.Root, 999, tlog.RecordHash(entries[231][:])))
		anchors, err := c.Anchors(ctx)
		require.NoError(t, err)
		require.Len(t, anchors, 1)
		assert.EqualValues(t, 300, anchors[0].Size)
	}
}

func TestExportWritesWhatTheLogGrewByAndAFullTileOnlyOnce(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	l.grow(t, 300)
	dir := t.TempDir()
	first, err := logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	// tile/0/000, entries/000, 0/001.p/44, entries/001.p/44, 1/000.p/1, checkpoints/300, anchors, key, checkpoint
	assert.Equal(t, 9, first.Files)

	again, err := logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	assert.Equal(t, 1, again.Files, "only anchors.json is rewritten when the log did not grow")

	// A full tile is never written again: a changed copy stays changed.
	full := filepath.Join(dir, "tile", "0", "000")
	require.NoError(t, os.WriteFile(full, []byte("left alone"), 0o644))
	l.grow(t, 300)
	grown, err := logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	assert.EqualValues(t, 300, grown.OldSize)
	assert.EqualValues(t, 600, grown.Size)
	b, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.Equal(t, "left alone", string(b))
	_, err = os.Stat(filepath.Join(dir, "tile", "0", "001"))
	assert.NoError(t, err, "the tile the log filled is written")
	_, err = os.Stat(filepath.Join(dir, "tile", "0", "002.p", "88"))
	assert.NoError(t, err)
}

func TestExportRefusesADirectoryHoldingAnotherLog(t *testing.T) {
	ctx := context.Background()
	a, b := newTestLog(t), newTestLog(t)
	a.grow(t, 3)
	b.grow(t, 3)
	dir := t.TempDir()
	_, err := logsvc.Export(ctx, a.st, dir)
	require.NoError(t, err)
	_, err = logsvc.Export(ctx, b.st, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds the log of key")
}

func TestExportRefusesAStoreOlderThanTheDirectory(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	l.grow(t, 3)
	dir := t.TempDir()
	_, err := logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	// The same log, signed further elsewhere: the directory is ahead.
	bigger, err := l.signer.Sign(evlog.Checkpoint{Origin: testOrigin, Size: 9})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoint"), bigger, 0o644))
	_, err = logsvc.Export(ctx, l.st, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "older backup")
}
