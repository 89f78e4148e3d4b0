package devnet

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// BenchmarkReplayingADayOfIdleKeeperDev measures the journal of a day of
// keeper dev with nothing to anchor (a block every 400 ms: 216,000 empty
// blocks): its size per hour, and how long a start takes to replay it and
// what the ledger then holds in memory.
//
//	go test ./internal/dev/devnet/ -run '^$' -bench ReplayingADay -benchtime 1x
func BenchmarkReplayingADayOfIdleKeeperDev(b *testing.B) {
	const blocks = 24 * 3600 * 1000 / 400
	dir := b.TempDir()
	d, err := Start(b.Context(), Options{Dir: dir, SlotTime: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	d.Pause()
	base := time.Now()
	d.mu.Lock()
	for i := range blocks {
		d.produceSlot(base.Add(time.Duration(i) * 400 * time.Millisecond))
	}
	d.mu.Unlock()
	d.Stop()
	st, err := os.Stat(filepath.Join(dir, journalFileName))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		began := time.Now()
		r, err := replayJournal(filepath.Join(dir, journalFileName))
		b.ReportMetric(float64(time.Since(began).Milliseconds()), "ms-replay")
		if err != nil || r == nil || len(r.l.blocks) < blocks {
			b.Fatalf("replay: %v", err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-ledger")
		runtime.KeepAlive(r)
	}
	b.ReportMetric(float64(st.Size())/24/1024, "KiB/hour")
}
