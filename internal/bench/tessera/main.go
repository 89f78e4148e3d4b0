// Command tessera-bench compares Trillian Tessera's storage drivers with a
// minimal model of keeper's own evidence log (log_entries + log_hashes rows
// in keeper's SQL store, integrated one transaction per batch), on the same
// machine in one run.
//
// Each run starts from an empty log, appends -n 32-byte entries flat out,
// then appends -rate-n more at a steady -rate per second, and reports:
// throughput flat out, the time from Add to the index being durably known,
// the time from Add to being covered by a published signed checkpoint
// (p50/p99), and the log's bytes on disk per entry.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"slices"
	"sort"
	"sync"
	"time"
)

// backend is one way of keeping the log: Tessera with a driver, or the SQL model.
type backend interface {
	// Add submits one entry and returns a function that blocks until the
	// entry's index is durably assigned.
	Add(ctx context.Context, entry []byte) func() (uint64, error)
	// Published returns the size of the latest published signed checkpoint.
	Published(ctx context.Context) (uint64, error)
	// Disk returns the bytes the log occupies on disk, and how that was measured.
	Disk(ctx context.Context) (int64, string, error)
	Close(ctx context.Context) error
}

// publication is a published checkpoint's size and the time it was first seen.
type publication struct {
	size uint64
	at   time.Time
}

// recorder keeps, per submitted entry, when it was added, which index it got
// and when that index was known; and every checkpoint publication seen.
type recorder struct {
	mu      sync.Mutex
	addAt   []time.Time
	idx     []uint64
	knownAt []time.Time
	pubs    []publication
}

func (r *recorder) published(size uint64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.pubs); n == 0 || r.pubs[n-1].size < size {
		r.pubs = append(r.pubs, publication{size, at})
	}
}

// watch polls the backend's published checkpoint every period until ctx ends.
func (r *recorder) watch(ctx context.Context, b backend, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			size, err := b.Published(ctx)
			if err == nil {
				r.published(size, time.Now())
			}
		}
	}
}

type phaseResult struct {
	Phase          string  `json:"phase"`
	Entries        int     `json:"entries"`
	Seconds        float64 `json:"seconds"`
	PerSecond      float64 `json:"entries_per_s"`
	KnownP50ms     float64 `json:"add_to_index_p50_ms"`
	KnownP99ms     float64 `json:"add_to_index_p99_ms"`
	PublishedP50ms float64 `json:"add_to_checkpoint_p50_ms"`
	PublishedP99ms float64 `json:"add_to_checkpoint_p99_ms"`
	PublishedMaxms float64 `json:"add_to_checkpoint_max_ms"`
	Checkpoints    int     `json:"checkpoints_seen"`
	GapFree        bool    `json:"indexes_gap_free_in_add_order"`
}

// runPhase appends n entries, at rate per second or flat out (rate 0), and
// waits until a published checkpoint covers them all.
func runPhase(ctx context.Context, b backend, name string, n, rate int, base uint64) phaseResult {
	r := &recorder{addAt: make([]time.Time, n), idx: make([]uint64, n), knownAt: make([]time.Time, n)}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go r.watch(wctx, b, 5*time.Millisecond)

	type pending struct {
		k int
		f func() (uint64, error)
	}
	futures := make(chan pending, 1<<16)
	resolved := make(chan error, 1)
	go func() {
		// Futures resolve in batch order, which is submission order here
		// (one submitter), so resolving them in order loses little time.
		for p := range futures {
			i, err := p.f()
			if err != nil {
				resolved <- fmt.Errorf("entry %d: %w", p.k, err)
				for range futures {
				}
				return
			}
			r.idx[p.k], r.knownAt[p.k] = i, time.Now()
		}
		resolved <- nil
	}()

	start := time.Now()
	for k := range n {
		if rate > 0 {
			due := start.Add(time.Duration(k) * time.Second / time.Duration(rate))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		e := make([]byte, 32)
		_, _ = rand.Read(e)
		r.addAt[k] = time.Now()
		futures <- pending{k, b.Add(ctx, e)}
	}
	close(futures)
	if err := <-resolved; err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	want := base + uint64(n)
	for {
		r.mu.Lock()
		done := len(r.pubs) > 0 && r.pubs[len(r.pubs)-1].size >= want
		r.mu.Unlock()
		if done {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	stopWatch()
	end := r.pubs[len(r.pubs)-1].at

	known := make([]time.Duration, n)
	pubd := make([]time.Duration, n)
	seen := make([]bool, n)
	gapFree := true
	for k := range n {
		known[k] = r.knownAt[k].Sub(r.addAt[k])
		j := sort.Search(len(r.pubs), func(j int) bool { return r.pubs[j].size > r.idx[k] })
		pubd[k] = r.pubs[j].at.Sub(r.addAt[k])
		if r.idx[k] < base || r.idx[k] >= want || seen[r.idx[k]-base] {
			gapFree = false
		} else {
			seen[r.idx[k]-base] = true
		}
		if k > 0 && r.idx[k] != r.idx[k-1]+1 {
			gapFree = false
		}
	}
	slices.Sort(known)
	slices.Sort(pubd)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	secs := end.Sub(start).Seconds()
	return phaseResult{
		Phase: name, Entries: n, Seconds: secs, PerSecond: float64(n) / secs,
		KnownP50ms: ms(known[n/2]), KnownP99ms: ms(known[n*99/100]),
		PublishedP50ms: ms(pubd[n/2]), PublishedP99ms: ms(pubd[n*99/100]), PublishedMaxms: ms(pubd[n-1]),
		Checkpoints: len(r.pubs), GapFree: gapFree,
	}
}

type result struct {
	Backend      string        `json:"backend"`
	Settings     string        `json:"settings"`
	Phases       []phaseResult `json:"phases"`
	DiskBytes    int64         `json:"disk_bytes_after_flat"`
	DiskPerEntry float64       `json:"disk_bytes_per_entry_after_flat"`
	DiskHow      string        `json:"disk_how"`
}

func main() {
	which := flag.String("backend", "posix", "posix | mysql (Tessera drivers) | sqlite | pg (keeper's model)")
	dir := flag.String("dir", "data", "directory for the posix log and the SQLite file")
	mysqlDSN := flag.String("mysql", "root@unix(/run/mysqld/mysqld.sock)/tessera_bench", "MySQL/MariaDB DSN for Tessera's mysql driver")
	pgURL := flag.String("pg", "postgres://root@127.0.0.1:5432/tessera_bench?sslmode=disable", "PostgreSQL URL for the SQL model")
	n := flag.Int("n", 200_000, "entries appended flat out")
	rateN := flag.Int("rate-n", 60_000, "entries appended at -rate per second after the flat-out phase")
	rate := flag.Int("rate", 1000, "entries per second in the steady phase")
	batch := flag.Int("batch", 1024, "largest batch integrated at once (both)")
	batchAge := flag.Duration("batch-age", 100*time.Millisecond, "Tessera: the longest an entry waits for its batch")
	cpEvery := flag.Duration("checkpoint-interval", time.Second, "Tessera: the shortest time between published checkpoints")
	every := flag.Duration("integrate-every", 0, "SQL model: the shortest time between integrations (and signed checkpoints)")
	flag.Parse()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		b        backend
		err      error
		settings string
	)
	switch *which {
	case "posix", "mysql":
		settings = fmt.Sprintf("batch %d / %v, checkpoint interval %v", *batch, *batchAge, *cpEvery)
		b, err = newTessera(ctx, *which, *dir, *mysqlDSN, uint(*batch), *batchAge, *cpEvery)
	case "sqlite", "pg":
		settings = fmt.Sprintf("batch ≤ %d, one tx and one signed checkpoint per integration, integrations ≥ %v apart", *batch, *every)
		b, err = newSQLModel(ctx, *which, *dir, *pgURL, *batch, *every)
	default:
		err = fmt.Errorf("unknown backend %q", *which)
	}
	if err != nil {
		log.Fatal(err)
	}
	res := result{Backend: *which, Settings: settings}
	res.Phases = append(res.Phases, runPhase(ctx, b, "flat out", *n, 0, 0))
	if res.DiskBytes, res.DiskHow, err = b.Disk(ctx); err != nil {
		log.Fatal(err)
	}
	res.DiskPerEntry = float64(res.DiskBytes) / float64(*n)
	if *rateN > 0 {
		res.Phases = append(res.Phases, runPhase(ctx, b, fmt.Sprintf("%d/s", *rate), *rateN, *rate, uint64(*n)))
	}
	if err := b.Close(ctx); err != nil {
		log.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
}
