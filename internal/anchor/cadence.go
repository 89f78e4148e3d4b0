package anchor

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Cadence shows on /metrics what the anchor interval does to the fee bill:
// per chain the configured interval, the ceiling it puts on batches an hour,
// the batches this dispatcher formed in the last hour, and those priority 1
// evidence sent before their interval was up. Methods are safe on a nil
// *Cadence.
type Cadence struct {
	interval func(chain string) time.Duration
	now      func() time.Time

	mu     sync.Mutex
	recent map[string][]time.Time // per chain, batch times within the last hour

	urgent *prometheus.CounterVec
}

// NewCadence returns unregistered cadence metrics for chains; Collectors
// lists what to register.
func NewCadence(interval func(chain string) time.Duration, chains []string) *Cadence {
	c := &Cadence{
		interval: interval, now: time.Now, recent: map[string][]time.Time{},
		urgent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_urgent_batches_total",
			Help: "Anchor batches formed before their chain's anchor interval was up because they held priority 1 evidence, by chain.",
		}, []string{"chain"}),
	}
	for _, ch := range chains {
		c.urgent.WithLabelValues(ch)
		c.recent[ch] = nil
	}
	return c
}

// Collectors are the cadence's metrics.
func (c *Cadence) Collectors() []prometheus.Collector {
	out := []prometheus.Collector{c.urgent}
	for chain := range c.recent {
		labels := prometheus.Labels{"chain": chain}
		out = append(out,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "keeper_anchor_interval_seconds", ConstLabels: labels,
				Help: "The chain's anchor interval: the least time between two of its batches (0: none).",
			}, func() float64 { return c.interval(chain).Seconds() }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "keeper_anchor_batches_per_hour_ceiling", ConstLabels: labels,
				Help: "3600 ÷ the chain's anchor interval: the most batches (each one anchor transaction) a dispatcher forms in an hour, besides full and priority 1 batches (0: no ceiling).",
			}, func() float64 { return ceiling(c.interval(chain)) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "keeper_anchor_batches_last_hour", ConstLabels: labels,
				Help: "Batches this dispatcher formed for the chain in the last hour: its anchor transactions, fee bumps aside.",
			}, func() float64 { return float64(c.lastHour(chain)) }),
		)
	}
	return out
}

func ceiling(interval time.Duration) float64 {
	if interval <= 0 {
		return 0
	}
	return float64(time.Hour) / float64(interval)
}

func (c *Cadence) formed(chain string, _ int, urgent bool) {
	if c == nil {
		return
	}
	if urgent {
		c.urgent.WithLabelValues(chain).Inc()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent[chain] = append(c.prune(chain), c.now())
}

func (c *Cadence) lastHour(chain string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent[chain] = c.prune(chain)
	return len(c.recent[chain])
}

// prune drops batch times older than an hour; the caller holds mu.
func (c *Cadence) prune(chain string) []time.Time {
	ts := c.recent[chain]
	cut := c.now().Add(-time.Hour)
	i := 0
	for i < len(ts) && ts[i].Before(cut) {
		i++
	}
	return ts[i:]
}
