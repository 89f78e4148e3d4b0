package epoch

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/store"
)

// Stats is the store as the epoch metrics read it at scrape time: epochs
// by status, the work in flight and the quarantined epochs
// (*store.Store).
type Stats interface {
	EpochCounts(ctx context.Context) (map[string]int, error)
	EpochStats(ctx context.Context) (store.EpochStats, error)
	QuarantinedEpochs(ctx context.Context, limit int) ([]string, error)
}

// maxQuarantinedSeries bounds keeper_epoch_quarantined's series: the most
// recently quarantined epochs; keeper_epochs_quarantined counts them all.
const maxQuarantinedSeries = 100

var (
	epochsDesc = prometheus.NewDesc("keeper_epochs",
		"Reward epochs by status (queued, computing, quarantined, completed, failed).", []string{"status"}, nil)
	queueDepthDesc  = prometheus.NewDesc("keeper_queue_depth", "Work waiting by queue: epochs in flight (queued or computing), and intents of in-flight epochs not yet acknowledged by the ledger.", []string{"queue"}, nil)
	quarantineDesc  = prometheus.NewDesc("keeper_epochs_quarantined", "Epochs quarantined now: inputs or payouts that failed a check (no intents were emitted), or intents that could not all be delivered (a count of stored epochs, so a gauge).", nil, nil)
	quarantinedDesc = prometheus.NewDesc("keeper_epoch_quarantined", "1 for each quarantined epoch, by epoch id: the 100 most recently quarantined (keeper_epochs_quarantined counts them all); a re-run removes its series.", []string{"epoch"}, nil)
)

// NewCollector reports the epoch metrics (docs/epochs.md) read from st at
// scrape time, so every API node reports the same numbers: keeper_epochs
// by status, keeper_queue_depth, keeper_epochs_quarantined and
// keeper_epoch_quarantined. The node registers it beside the API's.
func NewCollector(st Stats) prometheus.Collector { return collector{st} }

type collector struct{ st Stats }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- epochsDesc
	ch <- queueDepthDesc
	ch <- quarantineDesc
	ch <- quarantinedDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.collectCounts(ctx, ch)
	c.collectQueue(ctx, ch)
}

func (c collector) collectCounts(ctx context.Context, ch chan<- prometheus.Metric) {
	counts, err := c.st.EpochCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(epochsDesc, err)
		return
	}
	for _, s := range []string{store.EpochQueued, store.EpochComputing, store.EpochQuarantined, store.EpochCompleted, store.EpochFailed} {
		ch <- prometheus.MustNewConstMetric(epochsDesc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

func (c collector) collectQueue(ctx context.Context, ch chan<- prometheus.Metric) {
	s, err := c.st.EpochStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.InFlight), "epochs")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.IntentsPending), "intents")
	ch <- prometheus.MustNewConstMetric(quarantineDesc, prometheus.GaugeValue, float64(s.Quarantined))
	if s.Quarantined == 0 {
		return
	}
	ids, err := c.st.QuarantinedEpochs(ctx, maxQuarantinedSeries)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(quarantinedDesc, err)
		return
	}
	for _, id := range ids {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, 1, id)
	}
}
