package logsvc

import (
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/problem"
	"github.com/keeperhq/keeper/internal/store"
)

// Source is what the log is served from: *store.Store. Every method
// reports a missing row with an error wrapping store.ErrNotFound.
type Source interface {
	LatestCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	CheckpointAt(ctx context.Context, size uint64) (store.LogCheckpoint, error)
	LogKey(ctx context.Context) (string, error)
	LogHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error)
	LogEntries(ctx context.Context, from, to uint64) ([][32]byte, error)
	LogAnchors(ctx context.Context) ([]store.LogAnchor, error)
	TrustRoot(ctx context.Context) (store.TrustRoot, error)
	WitnessedCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
}

var _ Source = (*store.Store)(nil)

// Prefix is the path the log is served under. The handler is mounted at it
// unchanged (it sees /log/checkpoint, not /checkpoint).
const Prefix = "/log/"

// TrustPath is where the deployment's trust root is served, under Prefix,
// and written by Export.
const TrustPath = "trust"

// The answers' cache lifetimes. Full tiles never change. A partial tile's
// bytes do not change either, but a wider one replaces it as the log grows:
// caches keep it briefly. The checkpoint and the anchors list change with
// every append and anchor.
const (
	cacheImmutable = "public, max-age=31536000, immutable"
	cachePartial   = "public, max-age=60"
	cacheLatest    = "public, max-age=1"
	cacheKey       = "public, max-age=3600"
)

// DefaultTileCache is how many full tiles Server keeps in memory: with 8 KiB
// a tile, about 35 MiB.
const DefaultTileCache = 4096

// Server serves the log as C2SP tlog-tiles (c2sp.org/tlog-tiles) under
// Prefix, from Source:
//
//	GET /log/checkpoint                  the latest signed checkpoint (text/plain); with Witnessed, the newest one the witnesses' quorum cosigned
//	GET /log/key                         the verifier key (note vkey), then a newline
//	GET /log/trust                       the trust root (evlog/trust), a note signed by the log's key
//	GET /log/tile/<L>/<N>[.p/<W>]        hash tiles, within the latest checkpoint
//	GET /log/tile/entries/<N>[.p/<W>]    entry bundles, within the latest checkpoint
//
// and keeper's extensions for monitors (keeper log audit):
//
//	GET /log/checkpoints/<size>          a past checkpoint keeper signed (404 if none of that size)
//	GET /log/anchors (or anchors.json)   the confirmed anchors, a JSON list of evlog.Anchor
//
// A tile the latest checkpoint does not cover is 404, so no one reads a
// hash keeper has not signed a tree over. Full tiles are cached in memory
// (least recently used first out). Errors are problem details.
type Server struct {
	Source Source
	Logger *slog.Logger // default slog.Default()
	// TileCache bounds the full tiles kept in memory; default
	// DefaultTileCache, negative: none.
	TileCache int
	// Witnessed serves, as the log's checkpoint, the newest one its
	// witnesses' quorum cosigned, with their cosignature lines (the one
	// receipts name), rather than the newest signed (docs/log.md,
	// Witnesses).
	Witnessed bool

	once  sync.Once
	cache *tileCache
}

// Handler serves src's log under Prefix with the defaults.
func Handler(src Source) http.Handler { return &Server{Source: src} }

func (s *Server) init() {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	n := s.TileCache
	n = cmp.Or(n, DefaultTileCache)
	s.cache = newTileCache(max(n, 0))
}

// ServeHTTP answers GET and HEAD under Prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.once.Do(s.init)
	path, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		notFound(w, "no such route: "+r.URL.Path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		problem.Write(w, http.StatusMethodNotAllowed, problem.New(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on the log", ""))
		return
	}
	ctx := r.Context()
	switch {
	case path == evlog.CheckpointPath:
		s.checkpoint(ctx, w)
	case path == evlog.KeyPath:
		s.key(ctx, w)
	case path == TrustPath:
		s.trust(ctx, w)
	case path == "anchors" || path == evlog.AnchorsPath:
		s.anchors(ctx, w)
	case strings.HasPrefix(path, evlog.CheckpointsPath):
		s.checkpointAt(ctx, w, strings.TrimPrefix(path, evlog.CheckpointsPath))
	case strings.HasPrefix(path, "tile/"):
		s.tile(ctx, w, path)
	default:
		notFound(w, "no such file in the log: "+path)
	}
}

func (s *Server) checkpoint(ctx context.Context, w http.ResponseWriter) {
	c, err := s.latest(ctx)
	if errors.Is(err, store.ErrNotFound) {
		msg := "the log has no checkpoint yet"
		if s.Witnessed {
			msg = "the log has no checkpoint its witnesses' quorum cosigned yet"
		}
		notFound(w, msg)
		return
	}
	if err != nil {
		s.internal(w, "read the latest checkpoint", err)
		return
	}
	write(w, "text/plain; charset=utf-8", cacheLatest, c.Note)
}

// latest is the checkpoint served as the log's: the newest signed or, with
// Witnessed, the newest witnessed. Before the first is witnessed, the
// newest signed stands while the trust root asks no quorum at its size.
func (s *Server) latest(ctx context.Context) (store.LogCheckpoint, error) {
	if !s.Witnessed {
		return s.Source.LatestCheckpoint(ctx)
	}
	c, err := s.Source.WitnessedCheckpoint(ctx)
	if !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	latest, err := s.Source.LatestCheckpoint(ctx)
	if err != nil {
		return latest, err
	}
	t, err := s.Source.TrustRoot(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return latest, nil
	case err != nil:
		return latest, err
	case t.Root.Witnesses.QuorumAt(latest.Size) > 0:
		return latest, fmt.Errorf("no checkpoint is cosigned by the witnesses' quorum yet: %w", store.ErrNotFound)
	}
	return latest, nil
}

func (s *Server) key(ctx context.Context, w http.ResponseWriter) {
	k, err := s.Source.LogKey(ctx)
	if err != nil {
		s.internal(w, "read the log key", err)
		return
	}
	if k == "" {
		notFound(w, "the log has no key yet: it signs one with its first checkpoint")
		return
	}
	write(w, "text/plain; charset=utf-8", cacheKey, []byte(k+"\n"))
}

// trust serves the latest trust root as the log's key signed it. It
// changes only when an anchoring account is rotated or a network added.
func (s *Server) trust(ctx context.Context, w http.ResponseWriter) {
	t, err := s.Source.TrustRoot(ctx)
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, "the log has no trust root yet: a worker lists its anchoring accounts when it starts")
		return
	}
	if err != nil {
		s.internal(w, "read the trust root", err)
		return
	}
	write(w, "text/plain; charset=utf-8", cacheKey, t.Note)
}

func (s *Server) checkpointAt(ctx context.Context, w http.ResponseWriter, sizeText string) {
	size, err := strconv.ParseUint(sizeText, 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != sizeText {
		problem.Write(w, http.StatusBadRequest, problem.New(http.StatusBadRequest, "invalid_size", "checkpoints/<size>: the size is a decimal number without leading zeros", "size"))
		return
	}
	c, err := s.Source.CheckpointAt(ctx, size)
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, fmt.Sprintf("keeper signed no checkpoint of %d entries", size))
		return
	}
	if err != nil {
		s.internal(w, "read a checkpoint", err)
		return
	}
	// Keeper signs a size once (and Ed25519 signs it the same again).
	write(w, "text/plain; charset=utf-8", cacheImmutable, c.Note)
}

func (s *Server) anchors(ctx context.Context, w http.ResponseWriter) {
	as, err := s.Source.LogAnchors(ctx)
	if err != nil {
		s.internal(w, "read the anchors", err)
		return
	}
	out := make([]evlog.Anchor, 0, len(as))
	for _, a := range as {
		out = append(out, AnchorOf(a))
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.internal(w, "encode the anchors", err)
		return
	}
	write(w, "application/json", cacheLatest, b)
}

// AnchorOf is a stored anchor as the log lists it.
func AnchorOf(a store.LogAnchor) evlog.Anchor {
	out := evlog.Anchor{Chain: a.Chain, Network: a.Network, Account: a.Account, TxRef: a.TxRef, Block: a.Block,
		BlockHash: a.BlockHash, Finality: a.Finality, Size: a.Size}
	if a.BlockTime.UnixMilli() != 0 { // the store's "unknown"
		out.BlockTime = a.BlockTime.UTC()
	}
	return out
}

func (s *Server) tile(ctx context.Context, w http.ResponseWriter, path string) {
	t, err := evlog.ParseTilePath(path)
	if err != nil {
		problem.Write(w, http.StatusBadRequest, problem.New(http.StatusBadRequest, "invalid_tile_path", err.Error(), "path"))
		return
	}
	if t.Full() {
		t.Width = evlog.TileWidth
		if b, ok := s.cache.get(t); ok {
			write(w, "application/octet-stream", cacheImmutable, b)
			return
		}
	}
	latest, err := s.Source.LatestCheckpoint(ctx)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.internal(w, "read the latest checkpoint", err)
		return
	}
	if !covers(latest.Size, t) {
		notFound(w, fmt.Sprintf("%s is beyond the latest checkpoint (%d entries)", path, latest.Size))
		return
	}
	b, err := ReadTile(ctx, s.Source, t)
	if err != nil {
		s.internal(w, "read "+path, err)
		return
	}
	if t.Full() {
		s.cache.put(t, b)
		write(w, "application/octet-stream", cacheImmutable, b)
		return
	}
	write(w, "application/octet-stream", cachePartial, b)
}

// covers reports whether a tree of size entries holds every hash or entry
// of tile t.
func covers(size uint64, t evlog.Tile) bool {
	width := uint64(t.Width)
	if t.Full() {
		width = evlog.TileWidth
	}
	level := uint(max(t.Level, 0) * evlog.TileHeight)
	if level >= 64 {
		return false
	}
	have := size >> level // the hashes (or entries) at the tile's bottom level
	return t.N <= have/evlog.TileWidth && t.N*evlog.TileWidth+width <= have
}

// ReadTile builds tile t (a hash tile, or an entry bundle) from src's
// stored hashes and entries. t must be within src's log.
func ReadTile(ctx context.Context, src Source, t evlog.Tile) ([]byte, error) {
	width := t.Width
	if t.Full() {
		width = evlog.TileWidth
	}
	if t.Level == evlog.EntriesLevel {
		from := t.N * evlog.TileWidth
		entries, err := src.LogEntries(ctx, from, from+uint64(width))
		if err != nil {
			return nil, err
		}
		return evlog.EntryBundle(entries), nil
	}
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return src.LogHashes(ctx, ids) })
	return tlog.ReadTileData(tlog.Tile{H: evlog.TileHeight, L: t.Level, N: int64(t.N), W: width}, reader)
}

func write(w http.ResponseWriter, contentType, cacheControl string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b) // a HEAD request's writer discards it
}

func notFound(w http.ResponseWriter, msg string) {
	problem.Write(w, http.StatusNotFound, problem.New(http.StatusNotFound, "not_found", msg, ""))
}

// internal answers a failed read: 503 with Retry-After while the store
// cannot be reached (the same request may succeed later), else 500.
func (s *Server) internal(w http.ResponseWriter, what string, err error) {
	if store.Unavailable(err) {
		s.Logger.Warn("log: "+what+": the store cannot be reached", "error", err)
		w.Header().Set("Retry-After", "2")
		problem.Write(w, http.StatusServiceUnavailable, problem.New(http.StatusServiceUnavailable, "store_unavailable",
			what+" failed: keeper's store cannot be reached; retry after Retry-After", ""))
		return
	}
	s.Logger.Error("log: "+what, "error", err)
	problem.Write(w, http.StatusInternalServerError, problem.New(http.StatusInternalServerError, "internal", what+" failed; see keeper's log", ""))
}

// tileCache keeps the most recently read full tiles.
type tileCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of evlog.Tile, most recent first
	m     map[evlog.Tile]cached
}

type cached struct {
	b  []byte
	el *list.Element
}

func newTileCache(n int) *tileCache {
	return &tileCache{max: n, order: list.New(), m: make(map[evlog.Tile]cached, n)}
}

func (c *tileCache) get(t evlog.Tile) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[t]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e.el)
	return e.b, true
}

func (c *tileCache) put(t evlog.Tile, b []byte) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[t]; ok {
		return
	}
	c.m[t] = cached{b: b, el: c.order.PushFront(t)}
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(evlog.Tile)
		delete(c.m, old)
	}
}
