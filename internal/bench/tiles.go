package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
)

// tileMinEntries is the smallest log the tiles phase reads: 64 full tiles,
// so the reads spread over many rows and do not measure one cached tile.
const tileMinEntries = 64 * evlog.TileWidth

// tilePartialShare is the share of reads that ask for a partial tile (the
// right edge, read from the store each time), the rest full level-0 hash
// tiles picked at random, as log clients that prove inclusion read them.
const tilePartialShare = 0.1

// TilesReport is the tiles phase: clients reading the log's tiles from
// keeper's /log/ back to back.
type TilesReport struct {
	Clients      int            `json:"clients"`
	DurationS    float64        `json:"duration_s"`
	LogSize      uint64         `json:"log_size"`   // the latest checkpoint's size while they read
	FullTiles    uint64         `json:"full_tiles"` // full level-0 tiles in it, each as likely to be read
	PartialShare float64        `json:"partial_share"`
	PartialTiles []string       `json:"partial_tiles"` // the partial tiles read
	Reads        int            `json:"reads"`         // answered 200 with a whole tile
	ReadsPerSec  float64        `json:"reads_per_s"`
	Errors       int            `json:"errors"`
	ErrorsBy     map[string]int `json:"errors_by_status,omitempty"`
	Latency      Latency        `json:"latency"`
	CPUSeconds   float64        `json:"cpu_seconds"` // keeper's processes, the readers included
	CPUPer1000   float64        `json:"cpu_seconds_per_1000_reads"`
	Load1        float64        `json:"load_average_1m"`
}

// tiles reads the log's tiles on a stack: first growing the log to
// tileMinEntries if it is smaller (bulk requests, then a checkpoint over
// them), then o.TileClients reading for o.TileFor.
func tiles(ctx context.Context, o Options, st *stack, bulk *loader) (*TilesReport, error) {
	cp, err := logOfAtLeast(ctx, o, st, bulk, tileMinEntries)
	if err != nil {
		return nil, err
	}
	full := cp.Size / evlog.TileWidth
	partial := partialTiles(cp.Size)
	rep := &TilesReport{Clients: o.TileClients, LogSize: cp.Size, FullTiles: full, PartialShare: tilePartialShare, ErrorsBy: map[string]int{}}
	for _, t := range partial {
		rep.PartialTiles = append(rep.PartialTiles, t.Path())
	}
	base := "http://" + st.apis[0] + "/log/"
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: o.TileClients, MaxIdleConnsPerHost: o.TileClients, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
	defer hc.CloseIdleConnections()

	// One read first: a keeper that does not serve the log is a setup
	// error, not a measurement of zero reads.
	if code, err := readTile(ctx, hc, base, evlog.Tile{Level: 0, N: 0}); err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("bench: GET %stile/0/000 answered %d (%v): this keeper does not serve its log under /log/", base, code, err)
	}

	var (
		mu    sync.Mutex
		lat   []time.Duration
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	u0 := st.cpuUse()
	start := time.Now()
	stop := start.Add(o.TileFor)
	for c := range o.TileClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(start.UnixNano())))
			var mine []time.Duration
			mineCodes := map[int]int{}
			for time.Now().Before(stop) && ctx.Err() == nil {
				t := evlog.Tile{Level: 0, N: r.Uint64N(full)}
				if len(partial) > 0 && r.Float64() < tilePartialShare {
					t = partial[r.IntN(len(partial))]
				}
				t0 := time.Now()
				code, err := readTile(ctx, hc, base, t)
				if err != nil && ctx.Err() != nil {
					break
				}
				mine = append(mine, time.Since(t0))
				mineCodes[code]++
			}
			mu.Lock()
			lat = append(lat, mine...)
			for k, v := range mineCodes {
				codes[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	end := time.Now()
	u1 := st.cpuUse()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	rep.DurationS = round2(end.Sub(start).Seconds())
	for code, n := range codes {
		if code == http.StatusOK {
			rep.Reads += n
			continue
		}
		rep.Errors += n
		key := strconv.Itoa(code)
		if code == 0 {
			key = "transport"
		}
		rep.ErrorsBy[key] += n
	}
	rep.Latency = summarize(lat)
	rep.ReadsPerSec = round2(float64(rep.Reads) / end.Sub(start).Seconds())
	rep.CPUSeconds = round2(u1.self - u0.self)
	for i := range u1.procs {
		rep.CPUSeconds += round2(u1.procs[i] - u0.procs[i])
	}
	if rep.Reads > 0 {
		rep.CPUPer1000 = round2(rep.CPUSeconds / float64(rep.Reads) * 1000)
	}
	rep.Load1 = loadAverage()
	return rep, nil
}

// partialTiles are the log's right edge at size: the partial level-0 tile
// and the level-1 tile above the full ones, where they are partial.
func partialTiles(size uint64) []evlog.Tile {
	var out []evlog.Tile
	if w := size % evlog.TileWidth; w > 0 {
		out = append(out, evlog.Tile{Level: 0, N: size / evlog.TileWidth, Width: int(w)})
	}
	full := size / evlog.TileWidth
	if w := full % evlog.TileWidth; w > 0 {
		out = append(out, evlog.Tile{Level: 1, N: full / evlog.TileWidth, Width: int(w)})
	}
	return out
}

// readTile GETs one tile and reads it whole; a 200 whose body is not the
// tile's size counts as an error (status 0).
func readTile(ctx context.Context, hc *http.Client, base string, t evlog.Tile) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+t.Path(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	want := int64(evlog.TileWidth) * 32
	if !t.Full() {
		want = int64(t.Width) * 32
	}
	if resp.StatusCode == http.StatusOK && n != want {
		return 0, fmt.Errorf("tile %s: %d bytes, want %d", t.Path(), n, want)
	}
	return resp.StatusCode, nil
}

// logOfAtLeast returns the latest checkpoint once it holds at least n
// entries, posting bulk requests first while the log is smaller.
func logOfAtLeast(ctx context.Context, o Options, st *stack, bulk *loader, n uint64) (store.LogCheckpoint, error) {
	size, err := st.store.LogSize(ctx)
	if err != nil {
		return store.LogCheckpoint{}, err
	}
	if size < n {
		fmt.Fprintf(o.Progress, "bench: the log holds %d entries: posting %d more for the tiles phase\n", size, n-size)
		for posted := uint64(0); size+posted < n; posted += uint64(bulk.bulk) {
			if rs := bulk.postBulk(ctx, time.Now(), nil); len(rs) == 0 || rs[0].status != http.StatusAccepted {
				return store.LogCheckpoint{}, fmt.Errorf("bench: growing the log for the tiles phase: a bulk request failed")
			}
		}
	}
	deadline := time.Now().Add(o.Drain)
	for {
		cp, err := st.store.LatestCheckpoint(ctx)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return cp, err
		}
		if err == nil && cp.Size >= n {
			return cp, nil
		}
		if time.Now().After(deadline) {
			return cp, fmt.Errorf("bench: no checkpoint of %d entries after %v (latest %d)", n, o.Drain, cp.Size)
		}
		select {
		case <-ctx.Done():
			return cp, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
