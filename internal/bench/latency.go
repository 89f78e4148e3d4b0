package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarises a set of durations, in milliseconds.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p99_9_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// summarize sorts ds in place and returns its percentiles (nearest rank).
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	l := Latency{
		N:    len(ds),
		P50:  msOf(rank(ds, 0.50)),
		P95:  msOf(rank(ds, 0.95)),
		P99:  msOf(rank(ds, 0.99)),
		P999: msOf(rank(ds, 0.999)),
		Max:  msOf(ds[len(ds)-1]),
		Mean: msOf(sum / time.Duration(len(ds))),
	}
	return l
}

// rank is the nearest-rank percentile of sorted ds.
func rank(ds []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func msOf(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}
