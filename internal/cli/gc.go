package cli

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target keeper runs with unless GOGC
// is set: the heap may grow to five times what is live between two
// collections instead of twice. At 1,000 requests a second on two cores
// the collections were the intake's p99 (18.6 → 9.3 ms, and 311 → 453 MiB
// peak RSS for keeper dev's one process; docs/benchmarks.md, 2026-11-27).
// GOGC, or GOMEMLIMIT for a hard ceiling, overrides it.
const GCPercent = 400

// TuneGC sets GCPercent unless the environment sets GOGC.
func TuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
}
