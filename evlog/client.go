//go:build !js

// The log's HTTP client is for monitors and tools; the /verify page,
// compiled to WebAssembly, reads no log and links none of it.

package evlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// The files of a published log, relative to its prefix (keeper serves them
// under /log/, `keeper log export` writes them to a directory). checkpoint,
// key and tile/ are C2SP tlog-tiles; checkpoints/ and anchors.json are
// keeper's extensions for monitors (docs/log.md).
const (
	CheckpointPath  = "checkpoint"
	KeyPath         = "key"
	CheckpointsPath = "checkpoints/" // + decimal size: a past checkpoint keeper signed
	AnchorsPath     = "anchors.json" // the confirmed anchors keeper lists
)

// CheckpointAtPath is the path of the checkpoint of the given size.
func CheckpointAtPath(size uint64) string { return CheckpointsPath + strconv.FormatUint(size, 10) }

// Anchor is one confirmed anchor keeper lists at /log/anchors: a chain
// transaction, sent by Account, that commits to the log's checkpoint of
// Size entries. A monitor checks it against the chain rather than trust it.
type Anchor struct {
	Chain     string    `json:"chain"`
	Network   string    `json:"network"` // CAIP-2
	Account   string    `json:"account"`
	TxRef     string    `json:"tx_ref"`
	Block     uint64    `json:"block"`
	BlockHash string    `json:"block_hash"`
	BlockTime time.Time `json:"block_time,omitzero"`
	Finality  string    `json:"finality,omitempty"`
	Size      uint64    `json:"size"`
}

// ErrNotFound is returned for a file the log does not publish (HTTP 404, or
// no such file in the directory).
var ErrNotFound = errors.New("not published by the log")

// maxBody bounds what one read of the log takes in: tiles are 8,704 bytes
// at most, and only the anchors list grows.
const maxBody = 256 << 20

// Client reads a published log: over HTTP(S) from a URL (keeper's /log/,
// or any web server or bucket over an exported directory), or from a
// directory `keeper log export` wrote. Nothing it reads is trusted: callers
// verify checkpoints with a Key, and HashReader authenticates every tile
// against a checkpoint's root before it answers.
type Client struct {
	base string // URL ending in "/", or "" for a directory
	dir  string
	hc   *http.Client

	mu    sync.Mutex
	tiles map[tlog.Tile][]byte // tiles authenticated by a HashReader
}

// NewClient reads the log at location: an http(s) URL (the log's prefix,
// such as https://keeper.example.org/log) or a directory. hc nil is a
// client with a 30 s timeout.
func NewClient(location string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := &Client{hc: hc, tiles: map[tlog.Tile][]byte{}}
	if strings.HasPrefix(location, "http://") || strings.HasPrefix(location, "https://") {
		u, err := url.Parse(location)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("evlog: %q is not a URL", location)
		}
		c.base = strings.TrimSuffix(u.String(), "/") + "/"
		return c, nil
	}
	st, err := os.Stat(location)
	if err != nil {
		return nil, fmt.Errorf("evlog: the log directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("evlog: %s is not a directory (nor an http(s) URL)", location)
	}
	c.dir = location
	return c, nil
}

// Location is where the client reads (the URL ending in "/", or the directory).
func (c *Client) Location() string {
	if c.base != "" {
		return c.base
	}
	return c.dir
}

// Get reads one file of the log by its path under the prefix. A missing
// file wraps ErrNotFound.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	if c.base == "" {
		b, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(path)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("evlog: %s: %w", filepath.Join(c.dir, filepath.FromSlash(path)), ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("evlog: read %s: %w", path, err)
		}
		return b, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("evlog: %s: %w", path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("evlog: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("evlog: GET %s: %w", path, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		// The body is the server's; only its status is reported.
		return nil, fmt.Errorf("evlog: GET %s: %s", path, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("evlog: GET %s: %w", path, err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("evlog: GET %s: more than %d bytes", path, maxBody)
	}
	return b, nil
}

// Checkpoint reads the latest signed checkpoint (unverified).
func (c *Client) Checkpoint(ctx context.Context) ([]byte, error) {
	return c.Get(ctx, CheckpointPath)
}

// CheckpointAt reads the signed checkpoint of the given size (unverified);
// ErrNotFound when the log publishes none.
func (c *Client) CheckpointAt(ctx context.Context, size uint64) ([]byte, error) {
	return c.Get(ctx, CheckpointAtPath(size))
}

// Key reads the verifier key the log publishes. A monitor or verifier that
// takes it from the log trusts the log for it: pin the key instead.
func (c *Client) Key(ctx context.Context) (Key, error) {
	b, err := c.Get(ctx, KeyPath)
	if err != nil {
		return Key{}, err
	}
	return ParseKey(string(b))
}

// Anchors reads the confirmed anchors keeper lists.
func (c *Client) Anchors(ctx context.Context) ([]Anchor, error) {
	b, err := c.Get(ctx, AnchorsPath)
	if err != nil {
		return nil, err
	}
	var out []Anchor
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("evlog: %s: %w", AnchorsPath, err)
	}
	return out, nil
}

// Tile reads a hash tile or entry bundle as published (unverified). A
// partial tile that is not published is cut from its full tile, which a
// mirror may keep instead once the log has grown past it.
func (c *Client) Tile(ctx context.Context, t Tile) ([]byte, error) {
	b, err := c.Get(ctx, t.Path())
	if err == nil || t.Full() || !errors.Is(err, ErrNotFound) {
		return b, err
	}
	full := t
	full.Width = TileWidth
	b, ferr := c.Get(ctx, full.Path())
	if ferr != nil {
		return nil, err
	}
	return b, nil
}

// EntryBundle reads the entries of bundle n, width wide (TileWidth for a
// full bundle). Unverified: hash them into the tree to check them.
func (c *Client) EntryBundle(ctx context.Context, n uint64, width int) ([][32]byte, error) {
	t := Tile{Level: EntriesLevel, N: n, Width: width}
	b, err := c.Tile(ctx, t)
	if err != nil {
		return nil, err
	}
	entries, err := ParseEntryBundle(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Path(), err)
	}
	if len(entries) < width {
		return nil, fmt.Errorf("evlog: %s holds %d entries, want %d", t.Path(), len(entries), width)
	}
	return entries[:width], nil
}

// HashReader reads the stored hashes of the tree of size whose root is
// given, from the log's hash tiles: tlog.TileHashReader checks every tile
// against the root before it answers, so a hash it returns is the tree's.
func (c *Client) HashReader(ctx context.Context, size uint64, root [32]byte) tlog.HashReader {
	return tlog.TileHashReader(tlog.Tree{N: int64(size), Hash: root}, &tileReader{c: c, ctx: ctx})
}

// tileReader is a tlog.TileReader over the client.
type tileReader struct {
	c   *Client
	ctx context.Context
}

func (r *tileReader) Height() int { return TileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		r.c.mu.Lock()
		b, ok := r.c.tiles[t]
		r.c.mu.Unlock()
		if ok {
			out[i] = b
			continue
		}
		b, err := r.c.Tile(r.ctx, Tile{Level: t.L, N: uint64(t.N), Width: t.W})
		if err != nil {
			return nil, err
		}
		if len(b) < t.W*tlog.HashSize {
			return nil, fmt.Errorf("evlog: %s is %d bytes, want %d", Tile{Level: t.L, N: uint64(t.N), Width: t.W}.Path(), len(b), t.W*tlog.HashSize)
		}
		out[i] = b[:t.W*tlog.HashSize]
	}
	return out, nil
}

// SaveTiles keeps tiles TileHashReader authenticated: a tile's bytes are
// fixed once a signed tree covers them, whatever tree is read next.
func (r *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if len(r.c.tiles) > 1<<16 {
		clear(r.c.tiles)
	}
	for i, t := range tiles {
		r.c.tiles[t] = data[i]
	}
}
