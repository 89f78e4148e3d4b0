package backfill

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/store"
)

// Counts is the store as the backfill gauges need it, read at scrape time
// (*store.Store).
type Counts interface {
	BackfillCounts(ctx context.Context) ([]store.BackfillCount, error)
}

// Collector exports wallet backfill's gauges, read from the store at scrape
// time so that every API node reports the same numbers: the items by
// network and status, and the progress of those still queued or running.
// The node registers it beside the API's metrics.
type Collector struct {
	Store Counts
	// Networks are the configured networks: a network's progress is
	// counted in its Unit, and one this process does not know has none.
	Networks []Network
}

var (
	itemsDesc = prometheus.NewDesc("keeper_backfill_items",
		"Wallet backfill items (one per wallet and network) by network and status (PENDING, RUNNING, COMPLETED, FAILED, ABANDONED).", []string{"network", "status"}, nil)
	// Progress is counted in each network's own unit (blocks on EtherLink,
	// signatures on Solana), one metric per unit so a series never mixes two
	// quantities.
	scannedDescs = map[string]*prometheus.Desc{
		"blocks": prometheus.NewDesc("keeper_backfill_scanned_blocks",
			"Blocks scanned so far by the backfill items still queued or running, by network (EVM networks).", []string{"network"}, nil),
		"signatures": prometheus.NewDesc("keeper_backfill_scanned_signatures",
			"Signatures scanned so far by the backfill items still queued or running, by network (Solana).", []string{"network"}, nil),
	}
	targetDescs = map[string]*prometheus.Desc{
		"blocks": prometheus.NewDesc("keeper_backfill_target_blocks",
			"Blocks those items scan in all (known once a scan has fixed its target), by network.", []string{"network"}, nil),
		"signatures": prometheus.NewDesc("keeper_backfill_target_signatures",
			"Signatures those items scan in all (known once a scan has fixed its target), by network.", []string{"network"}, nil),
	}
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- itemsDesc
	for _, unit := range []string{"blocks", "signatures"} {
		ch <- scannedDescs[unit]
		ch <- targetDescs[unit]
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.Store.BackfillCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(itemsDesc, err)
		return
	}
	scanned, target := map[string]uint64{}, map[string]uint64{}
	for _, b := range counts {
		ch <- prometheus.MustNewConstMetric(itemsDesc, prometheus.GaugeValue, float64(b.Items), b.Network, string(b.Status))
		if b.Status.Active() {
			scanned[b.Network] += b.Scanned
			target[b.Network] += b.Total
		} else if _, ok := scanned[b.Network]; !ok {
			scanned[b.Network], target[b.Network] = 0, 0
		}
	}
	units := map[string]string{}
	for _, n := range c.Networks {
		units[n.Name] = n.Unit
	}
	for n := range scanned {
		unit := units[n]
		if scannedDescs[unit] == nil {
			continue // a network this process is not configured for: its unit is unknown here
		}
		ch <- prometheus.MustNewConstMetric(scannedDescs[unit], prometheus.GaugeValue, float64(scanned[n]), n)
		ch <- prometheus.MustNewConstMetric(targetDescs[unit], prometheus.GaugeValue, float64(target[n]), n)
	}
}
