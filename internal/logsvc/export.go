package logsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
)

// Exported is what one Export did.
type Exported struct {
	Size    uint64 // the checkpoint the directory now holds
	OldSize uint64 // the one it held before (0: none)
	Files   int    // files written (tiles, checkpoints, key, trust, anchors, checkpoint)
}

// Export mirrors src's log into dir as static files, the layout Server
// serves under Prefix: checkpoint, key, tile/<L>/<N>[.p/<W>],
// tile/entries/<N>[.p/<W>], checkpoints/<size> (the latest checkpoint and
// every anchored one), anchors.json and trust (the trust root as the log's
// key signed it, when there is one). With witnesses, checkpoint is the
// newest one their quorum cosigned, with their lines, as Server serves it. Any web server or bucket over dir
// then serves the log without keeper.
//
// Every file is written to a temporary name and renamed, so a reader never
// sees half a file; the checkpoint is written last, after every tile it
// covers. Export starts from the checkpoint dir already holds (verified
// with the log's key) and writes only the tiles the log grew by; a full
// tile is written once and never again. A directory holding another log's
// key is refused, and so is one holding a checkpoint larger than src's.
func Export(ctx context.Context, src Source, dir string) (Exported, error) {
	var res Exported
	latest, err := src.LatestCheckpoint(ctx)
	if err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	vkey, err := src.LogKey(ctx)
	if err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	key, err := evlog.ParseKey(vkey)
	if err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	if have, err := os.ReadFile(filepath.Join(dir, evlog.KeyPath)); err == nil && string(bytes.TrimSpace(have)) != key.Text {
		return res, fmt.Errorf("export the log: %s holds the log of key %s, not %s", dir, bytes.TrimSpace(have), key.Text)
	}
	if signed, err := os.ReadFile(filepath.Join(dir, evlog.CheckpointPath)); err == nil {
		if old, err := key.Open(signed); err == nil {
			res.OldSize = old.Size
		}
	}
	if res.OldSize > latest.Size {
		return res, fmt.Errorf("export the log: %s holds a checkpoint of %d entries and the store's log has %d: is the store an older backup?", dir, res.OldSize, latest.Size)
	}
	x := exporter{dir: dir, files: &res.Files}
	for _, t := range tlog.NewTiles(evlog.TileHeight, int64(res.OldSize), int64(latest.Size)) {
		tiles := []evlog.Tile{{Level: t.L, N: uint64(t.N), Width: t.W}}
		if t.L == 0 {
			tiles = append(tiles, evlog.Tile{Level: evlog.EntriesLevel, N: uint64(t.N), Width: t.W})
		}
		for _, et := range tiles {
			if err := x.once(et.Path(), func() ([]byte, error) { return ReadTile(ctx, src, et) }); err != nil {
				return res, err
			}
		}
	}
	anchors, err := src.LogAnchors(ctx)
	if err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	sizes := []uint64{latest.Size}
	listed := make([]evlog.Anchor, 0, len(anchors))
	for _, a := range anchors {
		sizes = append(sizes, a.Size)
		listed = append(listed, AnchorOf(a))
	}
	slices.Sort(sizes)
	for _, n := range slices.Compact(sizes) {
		err := x.once(evlog.CheckpointAtPath(n), func() ([]byte, error) {
			c, err := src.CheckpointAt(ctx, n)
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil // anchored by a keeper that signed it elsewhere: nothing to publish
			}
			return c.Note, err
		})
		if err != nil {
			return res, err
		}
	}
	b, err := json.Marshal(listed)
	if err != nil {
		return res, fmt.Errorf("export the log: %w", err)
	}
	if err := x.write(evlog.AnchorsPath, b); err != nil {
		return res, err
	}
	switch tr, err := src.TrustRoot(ctx); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return res, fmt.Errorf("export the log: %w", err)
	default:
		if have, _ := os.ReadFile(filepath.Join(dir, TrustPath)); !bytes.Equal(have, tr.Note) {
			if err := x.write(TrustPath, tr.Note); err != nil {
				return res, err
			}
		}
	}
	if err := x.once(evlog.KeyPath, func() ([]byte, error) { return []byte(key.Text + "\n"), nil }); err != nil {
		return res, err
	}
	if err := x.checkpoint(ctx, src, latest); err != nil {
		return res, err
	}
	res.Size = latest.Size
	return res, nil
}

// checkpoint writes the checkpoint served, last: the newest its
// witnesses' quorum cosigned when the log has witnesses (Server.Witnessed:
// receipts name it), else latest.
func (x exporter) checkpoint(ctx context.Context, src Source, latest store.LogCheckpoint) error {
	served := latest
	switch w, err := src.WitnessedCheckpoint(ctx); {
	case err == nil:
		served = w
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("export the log: %w", err)
	}
	if have, _ := os.ReadFile(filepath.Join(x.dir, evlog.CheckpointPath)); bytes.Equal(have, served.Note) {
		return nil
	}
	return x.write(evlog.CheckpointPath, served.Note)
}

// exporter writes the files of one export.
type exporter struct {
	dir   string
	files *int
}

func (x exporter) exists(path string) bool {
	_, err := os.Stat(filepath.Join(x.dir, filepath.FromSlash(path)))
	return err == nil
}

// once writes path unless it exists: its bytes never change. read
// answering nil writes nothing.
func (x exporter) once(path string, read func() ([]byte, error)) error {
	if x.exists(path) {
		return nil
	}
	b, err := read()
	if err != nil {
		return fmt.Errorf("export the log: %s: %w", path, err)
	}
	if b == nil {
		return nil
	}
	return x.write(path, b)
}

// write replaces path with b atomically: a temporary file in the same
// directory, synced, then renamed over it.
func (x exporter) write(path string, b []byte) error {
	full := filepath.Join(x.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("export the log: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(full), ".tmp-*")
	if err != nil {
		return fmt.Errorf("export the log: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), full)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("export the log: write %s: %w", full, err)
	}
	*x.files++
	return nil
}
